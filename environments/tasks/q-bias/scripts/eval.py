"""Score estimator.py: mean mse_auc over the 5 held-out MDPs (lower is better).

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


def _heldout() -> tuple[np.ndarray, np.ndarray]:
    path = HERE / "heldout.npz"
    if not path.exists():  # prepare.py not run yet in this copy: make the private data now
        sys.path.insert(0, str(HERE))
        import prepare

        prepare.main()
    data = np.load(path)
    return data["env_seeds"], data["qstars"]


def score(outputs: str) -> float:
    produced = load_json(outputs)
    if produced.get("gate"):
        print(f"gate: {produced['gate']}")
        return WORST
    seeds, qstars = _heldout()
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
