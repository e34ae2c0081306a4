"""Submission phase of local-learning: train with the workspace's rule, seeds 0, 1, 2 (test's;
each private split has its own three, for the split ``split.txt`` names).

Runs in its own sandboxed process (``environments/submission.py``) on the public training data
(``data/train.npz``); the held-out images and the secret transform stay in ``scripts/``. The
pristine harness trains the fixed LocalNet with rule.py; each seed's weights and the harness's
gate measurements go to the outputs, and ``eval.py`` tests the weights in another process.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from methods._submission import load_submission, save_json, save_outputs, split_of  # noqa: E402

#: the training seeds per private split (eval.py's SPLIT_SEEDS: eval.py is not in this phase)
SPLIT_SEEDS = {"test": (0, 1, 2), "search": (3, 4, 5), "select": (6, 7, 8)}


def produce(workspace: Path, here: Path, out: Path) -> None:
    harness, rule = load_submission(workspace, "harness.py"), load_submission(workspace, "rule.py")
    torch.set_num_threads(1)
    with np.load(workspace / "data" / "train.npz") as d:
        X_tr, y_tr = torch.as_tensor(d["X"]).float(), torch.as_tensor(d["y"]).long()
    built = []

    class Recorded(harness.LocalNet):  # the harness's model, kept to save its weights
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            built.append(self)

    harness.LocalNet = Recorded
    reports = {}
    for seed in SPLIT_SEEDS[split_of(here)]:
        try:  # no test data here: the harness's own test accuracy is on a dummy batch
            report = harness.run(rule, X_tr, y_tr, X_tr[:2], y_tr[:2], seed=seed)
        except harness.HarnessError as err:
            reports[str(seed)] = {"gate": str(err)}
            continue
        report.pop("test_acc", None)
        reports[str(seed)] = {"gate": "; ".join(harness.gate_failures(report)), **report}
        save_outputs(out, name=f"seed{seed}", **built[-1].state_dict())
    save_json(out, reports)
