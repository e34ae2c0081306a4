"""Score estimator.py: mean mse_auc over the 5 held-out MDPs (lower is better).

Three private splits of 5 MDPs each (prepare.py: seeds drawn from the task's private seed):
``score`` on ``test`` (what the task scored all along), ``search_score`` and ``select_score`` on
their own MDPs; ``produce.py`` ran the loop on the seeds of the split named by ``split.txt``.

The estimator is imported from the workspace; the loop, the MDPs, beta and the step size are
the library's (methods.twora_q.plugin). Gates: the module's N, target and estimate must exist
and behave, and module-level data must not change while it runs (state only through Q).
Two phases (``environments/submission.py``): ``produce.py`` ran the loop in the submission
phase and saved every logged estimate; this computes their errors against the true Q values.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from methods._submission import load_json, load_outputs
from methods.twora_q.experiment import squared_errors

HERE = Path(__file__).resolve().parent
WORST = float("inf")
RUNS = 20


FILES = {"test": "heldout.npz", "search": "search.npz", "select": "select.npz"}  # prepare.py's


def _heldout(split: str = "test") -> tuple[np.ndarray, np.ndarray]:
    path = HERE / FILES[split]
    if not path.exists():  # prepare.py not run yet in this copy: make the private data now
        sys.path.insert(0, str(HERE))
        import prepare

        prepare.main()
    with np.load(path) as data:
        return data["env_seeds"], data["qstars"]


def split_members(split: str) -> list[int]:
    """The MDP seeds a split is made of."""
    return [int(s) for s in _heldout(split)[0]]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    produced = load_json(outputs)
    if produced.get("gate"):
        print(f"gate: {produced['gate']}")
        return WORST
    seeds, qstars = _heldout(split)
    estimates = load_outputs(outputs)["estimates"]  # (logged steps, MDPs x runs, S, A)
    if estimates.ndim != 4 or estimates.shape[1] != RUNS * len(qstars) or not np.isfinite(estimates).all():
        print(f"gate: estimates of shape {estimates.shape}")
        return WORST
    aucs = []
    for i, qs in enumerate(qstars):
        mine = estimates[:, i * RUNS:(i + 1) * RUNS]
        aucs.append(float(np.mean([squared_errors(q, qs).mean() for q in mine])))
    print("per-MDP mse_auc:", ", ".join(f"{a:.3f}" for a in aucs))
    return float(np.mean(aucs))
