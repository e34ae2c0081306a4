"""Score a house-price workspace: mean absolute error of ``submission.csv`` (lower is better).

``submission.csv`` has a header ``Id,SalePrice`` and one row per test house. This never runs
the workspace's code. A missing submission raises ``FileNotFoundError``; missing ids or
non-finite prices raise ``ValueError``.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def _read(path: Path) -> dict[str, float]:
    if not path.exists():
        raise FileNotFoundError(f"{path.name} not found; run train.py to write it")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"Id", "SalePrice"} <= set(reader.fieldnames):
            raise ValueError(f"{path.name} must have the columns Id,SalePrice")
        out = {}
        for row in reader:
            try:
                price = float(row["SalePrice"])
            except (TypeError, ValueError) as err:
                raise ValueError(f"{path.name}: unreadable price for Id {row['Id']}") from err
            if not math.isfinite(price):
                raise ValueError(f"{path.name}: non-finite price for Id {row['Id']}")
            out[str(int(float(row["Id"])))] = price
        return out


def get_score(submission_folder: str = ".") -> float:
    truth = _read(ANSWERS)
    predicted = _read(Path(submission_folder) / "submission.csv")
    missing = set(truth) - set(predicted)
    if missing:
        raise ValueError(f"submission.csv lacks predictions for {len(missing)} test ids")
    return sum(abs(predicted[i] - y) for i, y in truth.items()) / len(truth)


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
