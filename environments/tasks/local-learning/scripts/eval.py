"""Score a workspace's rule.py: mean test error (%) over seeds 0, 1, 2 at 16 modules.

Retrains through the harness with the workspace's rule on all of data/train.npz and tests on
180 of the 540 held-out images, rebuilt here from scikit-learn's digits with the task's secret
transform. The private splits (environments/task/splits.py) share that pool, a third each
(``digits_transform.heldout_index``), and each trains with its own seeds (:data:`SPLIT_SEEDS`).
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
from digits_transform import heldout_index, transformed_split  # noqa: E402

#: the training seeds per private split (produce.py keeps the same table: it cannot import this)
SPLIT_SEEDS = {"test": (0, 1, 2), "search": (3, 4, 5), "select": (6, 7, 8)}
SEEDS = SPLIT_SEEDS["test"]
CPU_LIMIT_S = 120.0
WORST = 100.0


def split_members(split: str) -> list[str]:
    """``split``'s training seeds and its held-out images (indices into the 540)."""
    return [f"seed {s}" for s in SPLIT_SEEDS[split]] + [f"image {i}" for i in heldout_index(split)]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    from methods.sgr_local import LocalNet
    from methods.sgr_local.training import accuracy

    torch.set_num_threads(1)
    reports = load_json(outputs)
    _, _, X_te, y_te = (torch.as_tensor(a) for a in transformed_split())
    index = torch.as_tensor(heldout_index(split))
    X_te, y_te = X_te[index].float(), y_te[index]
    errors, cpu = [], 0.0
    for seed in SPLIT_SEEDS[split]:
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
        print(f"seed {seed}: {split} error {errors[-1]:.2f}%")
    value = float(np.mean(errors))
    print(f"{split} error {value:.3f}% on {len(y_te)} images (mean over seeds {list(SPLIT_SEEDS[split])})")
    return value
