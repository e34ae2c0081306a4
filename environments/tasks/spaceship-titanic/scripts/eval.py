"""Score a spaceship-titanic workspace: accuracy of ``submission.csv`` on the hidden labels.

``submission.csv`` has a header ``PassengerId,Transported`` (True/False, or 1/0) and one row
per test passenger. This never runs the workspace's code. A missing submission raises
``FileNotFoundError``; a malformed one ``ValueError``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ANSWERS = Path(__file__).resolve().parent / "answers.csv"
TRUE, FALSE = {"true", "1", "1.0"}, {"false", "0", "0.0"}


def _read(path: Path) -> dict[str, bool]:
    if not path.exists():
        raise FileNotFoundError(f"{path.name} not found; run train.py to write it")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        columns = set(reader.fieldnames or [])
        if not {"PassengerId", "Transported"} <= columns:
            raise ValueError(f"{path.name} must have the columns PassengerId,Transported")
        out = {}
        for row in reader:
            value = (row["Transported"] or "").strip().lower()
            if value not in TRUE | FALSE:
                raise ValueError(f"{path.name}: Transported must be True or False, "
                                 f"got {row['Transported']!r} for {row['PassengerId']}")
            out[row["PassengerId"].strip()] = value in TRUE
        return out


def get_score(submission_folder: str = ".") -> float:
    truth = _read(ANSWERS)
    predicted = _read(Path(submission_folder) / "submission.csv")
    missing = set(truth) - set(predicted)
    if missing:
        raise ValueError(f"submission.csv lacks predictions for {len(missing)} passengers")
    return sum(predicted[p] == t for p, t in truth.items()) / len(truth)


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
