"""Score a workspace's rule.py: mean test error (%) over seeds 0, 1, 2 at 16 modules.

Retrains through the harness with the workspace's rule on all of data/train.npz and tests on the
540 held-out images, rebuilt here from scikit-learn's digits with the task's secret transform.
Gates (each scores the worst value, 100% error): isolation at every step, saved-tensor memory at
most 0.6 of BP's, epochs <= 40, no parameters outside the model, 120 s of CPU in all.
Two phases (``environments/submission.py``): ``produce.py`` trains through the pristine harness
in the submission phase (no test data there) and saves the weights; this tests them.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from methods._submission import load_json, load_outputs  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from digits_transform import transformed_split  # noqa: E402

SEEDS = (0, 1, 2)
CPU_LIMIT_S = 120.0
WORST = 100.0


def score(outputs: str) -> float:
    from methods.sgr_local import LocalNet
    from methods.sgr_local.training import accuracy

    torch.set_num_threads(1)
    reports = load_json(outputs)
    _, _, X_te, y_te = (torch.as_tensor(a) for a in transformed_split())
    X_te = X_te.float()
    errors, cpu = [], 0.0
    for seed in SEEDS:
        report = reports.get(str(seed)) or {"gate": "no run"}
        problems = [report["gate"]] if report.get("gate") else []
        cpu += float(report.get("cpu_seconds", 0.0))
        if cpu > CPU_LIMIT_S:
            problems.append(f"training took {cpu:.0f} s of CPU (limit {CPU_LIMIT_S:.0f} s)")
        if problems:
            print(f"gate (seed {seed}): " + "; ".join(problems))
            return WORST
        model = LocalNet(64, 64, 16, 10, seed=seed)
        model.load_state_dict({k: torch.from_numpy(v) for k, v in
                               load_outputs(outputs, f"seed{seed}").items()})
        model.eval()
        with torch.no_grad():
            errors.append(100.0 * (1.0 - accuracy(model, X_te, y_te.long())))
        print(f"seed {seed}: test error {errors[-1]:.2f}%")
    value = float(np.mean(errors))
    print(f"test_error {value:.3f}% (mean over seeds {list(SEEDS)})")
    return value
