"""Submission phase of q-bias: the library's loop with the workspace's estimator.py.

Runs in its own sandboxed process (``environments/submission.py``) with the MDPs' seeds only
(:func:`seeds_file`: the seeds of the private split named by ``split.txt``; the true Q values
stay in ``scripts/``). Every estimate the loop asks
for (``est.estimate(Q)`` at each logged step) is saved to ``outputs.npz``; ``eval.py`` computes
the MSE curve and its area against the true Q values in another process.
"""

from __future__ import annotations

import pickle
import types
from pathlib import Path

import numpy as np

from methods._submission import load_submission, save_json, save_outputs, split_of
from methods.twora_q.mdp import make_random_mdp
from methods.twora_q.plugin import run_estimator

RUNS, STEPS, SEED = 20, 100_000, 7


def _module_data(module: types.ModuleType) -> dict[str, bytes]:
    """Pickled snapshot of the module's plain data (what a hidden counter would change)."""
    out = {}
    for name, value in vars(module).items():
        if name.startswith("__") or isinstance(value, (types.ModuleType, types.FunctionType, type)):
            continue
        try:
            out[name] = pickle.dumps(value)
        except Exception:  # noqa: BLE001 - unpicklable objects are compared by identity only
            out[name] = repr(id(value)).encode()
    return out


def seeds_file(here: Path, split: str) -> Path:
    """A split's MDP seeds (prepare.py writes them; test's file keeps its historical name)."""
    return here / "inputs" / ("env_seeds.npy" if split == "test" else f"{split}_env_seeds.npy")


class Recorder:
    """The estimator as the loop sees it, keeping a copy of every estimate it returns."""

    def __init__(self, est: types.ModuleType) -> None:
        self.N, self._est, self.estimates = getattr(est, "N", None), est, []

    def target(self, *args):
        return self._est.target(*args)

    def estimate(self, Q):
        q = np.array(self._est.estimate(Q), dtype=float)
        self.estimates.append(q)
        return q


def produce(workspace: Path, here: Path, out: Path) -> None:
    if not (workspace / "estimator.py").exists():
        save_json(out, {"gate": "estimator.py is missing"})
        return
    est = load_submission(workspace, "estimator.py", name="estimator")
    before = _module_data(est)
    mdps = [make_random_mdp(int(s), 0.9) for s in np.load(seeds_file(here, split_of(here)))]
    blank = [np.zeros((m.n_states, m.n_actions)) for m in mdps]  # the truth is eval.py's
    rec = Recorder(est)
    try:
        run_estimator(rec, mdps, blank, steps=STEPS, runs=RUNS, seed=SEED)
    except ValueError as err:
        save_json(out, {"gate": str(err)})
        return
    if _module_data(est) != before:
        save_json(out, {"gate": "module-level data of estimator.py changed during the run "
                                "(state only through Q)"})
        return
    save_json(out, {"gate": None})
    save_outputs(out, estimates=np.stack(rec.estimates[:-1]))  # the last is the final q_bar
