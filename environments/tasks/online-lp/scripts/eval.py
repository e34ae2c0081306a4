"""Score a workspace's policy.py: mean regret/s over 24 private 'scaled' instances (lower is better).

Each private split (search, select, test: ``environments/task/splits.py``) is 24 instances of its
own, disjoint seeds (``prepare.SPLIT_SEEDS``); test's are the 24 scored before the splits.

Eval owns the arrivals, the budgets and the bookkeeping (methods.online_lp.interface). The 24
instances run together, one state row each; then one private row is re-run alone and must
give the same decisions (rows may not share information). A policy that breaks the interface,
couples rows or takes more than 120 s raises, which is recorded as an eval error.

Two phases (``environments/submission.py``): ``produce.py`` ran the policy in the submission
phase and saved its decisions; this replays them against the budgets and scores them.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from methods._submission import load_outputs  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from produce import instances  # noqa: E402
from methods.online_lp.simulate import Batch  # noqa: E402



def replay(batch: Batch, decisions: np.ndarray) -> np.ndarray:
    """The rewards of ``decisions``, each checked against the budget left at its time."""
    T, n = batch.T, batch.d.shape[0]
    if decisions.shape != (T, n) or not np.isin(decisions, (0.0, 1.0)).all():
        raise RuntimeError(f"decisions must be a ({T}, {n}) 0/1 matrix")
    b = T * batch.d.copy()
    for i in range(T):
        x = decisions[i]
        if ((batch.a[i] > b) .any(axis=1) & (x > 0)).any():
            raise RuntimeError(f"step {i + 1}: an order was accepted beyond the budget")
        b -= batch.a[i] * x[:, None]
    return (batch.c * decisions).sum(axis=0)


def private_file(split: str) -> str:
    """The split's seeds, scales and hindsight optima (prepare.py writes them here)."""
    return "private.json" if split == "test" else f"private_{split}.json"


def _private(split: str) -> dict:
    return json.loads((HERE / private_file(split)).read_text())


def split_members(split: str) -> list[int]:
    """The seeds of ``split``'s 24 private instances (from its prepared private file)."""
    return [r["seed"] for r in _private(split)["instances"]]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    private = _private(split)
    insts = instances(private)
    opt = np.array([r["offline_opt"] for r in private["instances"]])
    scales = np.array([inst.scale_s for inst in insts])
    produced = load_outputs(outputs)
    reward = replay(Batch.stack(insts), produced["decisions"])
    probe = private["probe_row"]
    replay(Batch.stack([insts[probe]]), produced["alone"])
    if not np.array_equal(produced["alone"][:, 0], produced["decisions"][:, probe]):
        raise RuntimeError("rows are not independent: an instance run alone decided differently")
    regret = (opt - reward) / scales
    print(f"regret/s per instance: {np.round(regret, 2).tolist()}")
    return float(regret.mean())
