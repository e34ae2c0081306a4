"""Score estimator.py: mean mse_auc over the 5 held-out MDPs (lower is better).

The estimator is imported from the workspace; the loop, the MDPs, beta and the step size are
the library's (methods.twora_q.plugin). Gates: the module's N, target and estimate must exist
and behave, and module-level data must not change while it runs (state only through Q).
"""

from __future__ import annotations

import pickle
import sys
import types
from pathlib import Path

import numpy as np

from methods._submission import load_submission
from methods.twora_q.mdp import make_random_mdp
from methods.twora_q.plugin import run_estimator

HERE = Path(__file__).resolve().parent
WORST = float("inf")
RUNS, STEPS, SEED = 20, 100_000, 7


def _heldout() -> tuple[np.ndarray, np.ndarray]:
    path = HERE / "heldout.npz"
    if not path.exists():  # prepare.py not run yet in this copy: make the private data now
        sys.path.insert(0, str(HERE))
        import prepare

        prepare.main()
    data = np.load(path)
    return data["env_seeds"], data["qstars"]


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


def get_score(submission_folder: str) -> float:
    folder = Path(submission_folder).resolve()
    if not (folder / "estimator.py").exists():
        print("gate: estimator.py is missing")
        return WORST
    est = load_submission(folder, "estimator.py", name="estimator")
    before = _module_data(est)
    seeds, qstars = _heldout()
    mdps = [make_random_mdp(int(s), 0.9) for s in seeds]
    try:
        results = run_estimator(est, mdps, list(qstars), steps=STEPS, runs=RUNS, seed=SEED)
    except ValueError as err:
        print(f"gate: {err}")
        return WORST
    if _module_data(est) != before:
        print("gate: module-level data of estimator.py changed during the run (state only through Q)")
        return WORST
    aucs = [r.mse_auc for r in results]
    print("per-MDP mse_auc:", ", ".join(f"{a:.3f}" for a in aucs))
    return float(np.mean(aucs))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
