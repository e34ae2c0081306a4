"""Submission phase of sparse-robustness: turn the workspace's Net + model.pt into data.

Runs in its own sandboxed process (``environments/submission.py``): it builds model.py's Net,
loads model.pt and exports the forward pass (``torch.export``, batch of ``BATCH`` images) as a
graph of ATen ops plus weights. ``eval.py`` attacks that graph in another process; no code of
the submission's runs there.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from methods._exported import save_exported  # noqa: E402
from methods._submission import load_submission  # noqa: E402

BATCH = 64


def produce(workspace: Path, here: Path, out: Path) -> None:
    torch.set_num_threads(1)
    if not (workspace / "model.pt").is_file():
        raise FileNotFoundError("model.pt is missing (run train.py)")
    model = load_submission(workspace, "model.py").Net()
    model.load_state_dict(torch.load(workspace / "model.pt", map_location="cpu", weights_only=True))
    save_exported(out, "model", model.eval(), (torch.zeros(BATCH, 1, 8, 8),))
