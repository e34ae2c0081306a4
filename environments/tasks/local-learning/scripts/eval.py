"""Score a workspace's rule.py: mean test error (%) over seeds 0, 1, 2 at 16 modules.

Retrains through the harness with the workspace's rule on all of data/train.npz and tests on the
540 held-out images, rebuilt here from scikit-learn's digits with the task's secret transform.
Gates (each scores the worst value, 100% error): isolation at every step, saved-tensor memory at
most 0.6 of BP's, epochs <= 40, no parameters outside the model, 120 s of CPU in all.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from methods._submission import load_submission  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from digits_transform import transformed_split  # noqa: E402

SEEDS = (0, 1, 2)
CPU_LIMIT_S = 120.0
WORST = 100.0


def get_score(submission_folder: str) -> float:
    folder = Path(submission_folder).resolve()
    sys.path.insert(0, str(folder))
    harness, rule = load_submission(folder, "harness.py"), load_submission(folder, "rule.py")
    torch.set_num_threads(1)
    X_tr, y_tr, X_te, y_te = (torch.as_tensor(a) for a in transformed_split())
    X_tr, X_te = X_tr.float(), X_te.float()
    errors, cpu = [], 0.0
    for seed in SEEDS:
        try:
            report = harness.run(rule, X_tr, y_tr.long(), X_te, y_te.long(), seed=seed)
        except harness.HarnessError as err:
            print(f"gate: {err}")
            return WORST
        cpu += report["cpu_seconds"]
        problems = harness.gate_failures(report)
        if cpu > CPU_LIMIT_S:
            problems.append(f"training took {cpu:.0f} s of CPU (limit {CPU_LIMIT_S:.0f} s)")
        if problems:
            print(f"gate (seed {seed}): " + "; ".join(problems))
            return WORST
        errors.append(100.0 * (1.0 - report["test_acc"]))
        print(f"seed {seed}: test error {errors[-1]:.2f}%  ratio {report['saved_bytes_ratio']:.3f}"
              f"  cpu {report['cpu_seconds']:.1f} s")
    score = float(np.mean(errors))
    print(f"test_error {score:.3f}% (mean over seeds {list(SEEDS)})")
    return score


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
