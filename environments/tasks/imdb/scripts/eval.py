"""Score an imdb workspace: accuracy of ``submission.csv`` (id,label) on the hidden labels.

Labels are 1 (positive) or 0 (negative), one row per test review. This never runs the
workspace's code. A missing submission raises ``FileNotFoundError``; a malformed one
``ValueError``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def _read(path: Path) -> dict[str, int]:
    if not path.exists():
        raise FileNotFoundError(f"{path.name} not found; run train.py to write it")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not {"id", "label"} <= set(reader.fieldnames or []):
            raise ValueError(f"{path.name} must have the columns id,label")
        out = {}
        for row in reader:
            try:
                label = int(float(row["label"]))
            except (TypeError, ValueError) as err:
                raise ValueError(f"{path.name}: unreadable label for id {row['id']}") from err
            if label not in (0, 1):
                raise ValueError(f"{path.name}: label must be 0 or 1, got {label}")
            out[str(int(float(row["id"])))] = label
        return out


def get_score(submission_folder: str = ".") -> float:
    truth = _read(ANSWERS)
    predicted = _read(Path(submission_folder) / "submission.csv")
    missing = set(truth) - set(predicted)
    if missing:
        raise ValueError(f"submission.csv lacks predictions for {len(missing)} test reviews")
    return sum(predicted[i] == y for i, y in truth.items()) / len(truth)


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
