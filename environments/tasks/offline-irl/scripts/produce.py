"""Submission phase of offline-irl: the workspace's feasible.classify on one split's 30 instances
(the split ``split.txt`` names: ``methods._submission.split_of``).

Runs in its own sandboxed process (``environments/submission.py``) with the instances' solver
inputs only (``inputs/instances.npz``, written by prepare.py; no labels). The (in_subset,
in_superset) masks go to ``outputs.npz``; ``eval.py`` checks soundness and recall on the exact
labels in another process.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from methods._submission import load_submission, save_outputs, split_of  # noqa: E402
from methods.offline_irl.instances import SOLVER_KEYS  # noqa: E402


def inputs_file(split: str) -> str:
    """The split's instances' solver inputs under ``inputs/`` (test's kept its old name)."""
    return "instances.npz" if split == "test" else f"instances_{split}.npz"


def produce(workspace: Path, here: Path, out: Path) -> None:
    classify = load_submission(workspace, "feasible.py").classify
    with np.load(here / "inputs" / inputs_file(split_of(here))) as data:
        arrays = {k: data[k] for k in data.files}
    masks = {}
    for i in range(len(arrays) // len(SOLVER_KEYS)):
        visible = {k: np.array(arrays[f"{i}/{k}"], copy=True) for k in SOLVER_KEYS}
        result = classify(visible)
        try:
            sub, sup = (np.asarray(x) for x in result)
        except (TypeError, ValueError):
            sub = sup = np.zeros(0)  # eval.py reports the malformed output
        masks[f"sub{i}"], masks[f"sup{i}"] = sub, sup
    save_outputs(out, **masks)
