"""Score an ogbn-arxiv workspace: accuracy of ``submission.csv`` (node,label) on test papers.

This never runs the workspace's code. A missing submission raises ``FileNotFoundError``; a
malformed one or one lacking test papers ``ValueError``.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def _read(path: Path) -> dict[int, int]:
    if not path.exists():
        raise FileNotFoundError(f"{path.name} not found; run train.py to write it")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not {"node", "label"} <= set(reader.fieldnames or []):
            raise ValueError(f"{path.name} must have the columns node,label")
        try:
            return {int(float(r["node"])): int(float(r["label"])) for r in reader}
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path.name}: unreadable row ({err})") from err


def get_score(submission_folder: str = ".") -> float:
    truth = _read(ANSWERS)
    predicted = _read(Path(submission_folder) / "submission.csv")
    missing = set(truth) - set(predicted)
    if missing:
        raise ValueError(f"submission.csv lacks predictions for {len(missing)} test papers")
    return sum(predicted[v] == c for v, c in truth.items()) / len(truth)


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
