"""Score a clrs-sorting workspace: successor-pointer accuracy on the held-out (larger) sets.

``submission.csv`` has a header ``example,item,successor`` and one row per real item of every
test set. The score is the fraction of items whose successor is right (pooled over the test
sizes). test.npz also holds the private search and select sets (rows after the test ones,
task.toml [splits]); ``get_search_score`` / ``get_select_score`` score those the same way, and
each split needs all its rows in the submission. This never runs the workspace's code. A
missing submission raises ``FileNotFoundError``; a malformed or incomplete one ``ValueError``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ANSWERS = HERE / "answers.npz"  # the test split: rows 0..T-1 of test.npz
SPLIT_ANSWERS = {"search": HERE / "search_answers.npz", "select": HERE / "select_answers.npz"}


def _answers(split: str) -> tuple[np.ndarray, np.ndarray]:
    """(the test.npz rows of ``split``, their successors)."""
    if split == "test":
        successor = np.load(ANSWERS)["successor"]
        return np.arange(len(successor)), successor
    with np.load(SPLIT_ANSWERS[split]) as z:
        return z["example"], z["successor"]


def split_members(split: str) -> list[int]:
    """The test.npz rows (``example`` ids) ``split`` is made of."""
    return [int(e) for e in _answers(split)[0]]


def get_score(submission_folder: str = ".") -> float:
    return split_score(submission_folder, "test")


def get_search_score(submission_folder: str = ".") -> float:
    return split_score(submission_folder, "search")


def get_select_score(submission_folder: str = ".") -> float:
    return split_score(submission_folder, "select")


def split_score(submission_folder: str, split: str) -> float:
    examples, successor = _answers(split)
    row_of = {int(e): r for r, e in enumerate(examples)}
    path = Path(submission_folder) / "submission.csv"
    if not path.exists():
        raise FileNotFoundError("submission.csv not found; run train.py to write it")
    predicted = np.full_like(successor, -2)
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not {"example", "item", "successor"} <= set(reader.fieldnames or []):
            raise ValueError("submission.csv must have the columns example,item,successor")
        for row in reader:
            try:
                e, i, s = (int(float(row[c])) for c in ("example", "item", "successor"))
            except (TypeError, ValueError) as err:
                raise ValueError(f"submission.csv: unreadable row {row}") from err
            if e in row_of and 0 <= i < successor.shape[1]:
                predicted[row_of[e], i] = s
    real = successor >= 0
    missing = int((predicted[real] == -2).sum())
    if missing:
        raise ValueError(f"submission.csv lacks successors for {missing} {split} items")
    sizes = real.sum(1)
    for n in np.unique(sizes):
        rows = sizes == n
        acc = (predicted[rows] == successor[rows])[real[rows]].mean()
        print(f"sets of {n} items: pointer accuracy {acc:.3f}")
    return float((predicted == successor)[real].mean())


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
