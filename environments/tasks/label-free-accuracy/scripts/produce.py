"""Submission phase of label-free-accuracy: the workspace's features() on every shifted set.

Runs in its own sandboxed process (``environments/submission.py``) over one split's shifted sets
(no accuracies): test's are the public data/shifted/, search's and select's ``inputs/<split>/``.
The features go to ``outputs.json`` by set name; ``eval.py`` fits the LOCO regression on the
private accuracies in another process.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import torch

from methods._submission import load_submission, save_json, split_of

FORBIDDEN = re.compile(r"load_digits|digits\.csv|digits\.rst")


def _forbidden_reference(folder: Path) -> str | None:
    for py in folder.rglob("*.py"):
        if FORBIDDEN.search(py.read_text(errors="ignore")):
            return str(py.relative_to(folder))
    return None


def produce(workspace: Path, here: Path, out: Path) -> None:
    torch.set_num_threads(1)
    bad = _forbidden_reference(workspace)
    if bad:
        save_json(out, {"gate": f"{bad} refers to sklearn's bundled digits"})
        return
    from methods.entropy_enigma.model import DigitsBNMLP

    source = DigitsBNMLP()
    source.load_state_dict(torch.load(workspace / "source_model.pt", weights_only=True))
    source.eval()
    module = load_submission(workspace, "features.py", name="features")
    feats = {}
    split = split_of(here)  # test's sets are the public ones, the others only shown here
    sets = workspace / "data" / "shifted" if split == "test" else here / "inputs" / split
    for path in sorted(sets.glob("*.npz")):
        x = np.load(path)["X"]
        f = module.features(copy.deepcopy(source), x.copy())
        feats[path.stem] = np.asarray(f, dtype=float).ravel().tolist()
    save_json(out, {"features": feats})
