"""Score a digits workspace: accuracy of ``submission.csv`` against the private test labels.

``submission.csv`` has a header ``id,label`` and one row per test image. This never runs the
workspace's code. A missing submission raises ``FileNotFoundError``, a malformed one
``ValueError``, each with the reason.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

LABELS = Path(__file__).resolve().parent / "test_labels.csv"


def _read(path: Path, what: str) -> dict[int, int]:
    if not path.exists():
        raise FileNotFoundError(f"{what} {path.name} not found; run train.py to write it")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"id", "label"} <= set(reader.fieldnames):
            raise ValueError(f"{path.name} must have the columns id,label")
        try:
            return {int(float(row["id"])): int(float(row["label"])) for row in reader}
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path.name}: unreadable row ({err})") from err


def get_score(submission_folder: str = ".") -> float:
    truth = _read(LABELS, "private labels")
    predicted = _read(Path(submission_folder) / "submission.csv", "submission")
    missing = set(truth) - set(predicted)
    if missing:
        raise ValueError(f"submission.csv lacks predictions for {len(missing)} test ids")
    correct = sum(predicted[i] == label for i, label in truth.items())
    return correct / len(truth)


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
