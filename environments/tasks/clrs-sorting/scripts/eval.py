"""Score a clrs-sorting workspace: successor-pointer accuracy on the held-out (larger) sets.

``submission.csv`` has a header ``example,item,successor`` and one row per real item of every
test set. The score is the fraction of items whose successor is right (pooled over the test
sizes). This never runs the workspace's code. A missing submission raises
``FileNotFoundError``; a malformed or incomplete one ``ValueError``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

ANSWERS = Path(__file__).resolve().parent / "answers.npz"


def get_score(submission_folder: str = ".") -> float:
    successor = np.load(ANSWERS)["successor"]
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
            if 0 <= e < successor.shape[0] and 0 <= i < successor.shape[1]:
                predicted[e, i] = s
    real = successor >= 0
    missing = int((predicted[real] == -2).sum())
    if missing:
        raise ValueError(f"submission.csv lacks successors for {missing} test items")
    sizes = real.sum(1)
    for n in np.unique(sizes):
        rows = sizes == n
        acc = (predicted[rows] == successor[rows])[real[rows]].mean()
        print(f"sets of {n} items: pointer accuracy {acc:.3f}")
    return float((predicted == successor)[real].mean())


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
