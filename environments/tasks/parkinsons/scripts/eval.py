"""Score a parkinsons workspace: SMAPE of ``submission.csv`` on the hidden ratings (lower is
better).

SMAPE = 100 * mean(2 |F - A| / (|F| + |A|)), with a term of 0 where forecast and actual are
both 0 (the convention of the Kaggle competition this task mirrors). ``submission.csv`` has
the columns prediction_id,rating. This never runs the workspace's code. A missing submission
raises ``FileNotFoundError``; a malformed or incomplete one ``ValueError``.
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
        if not {"prediction_id", "rating"} <= set(reader.fieldnames or []):
            raise ValueError(f"{path.name} must have the columns prediction_id,rating")
        out = {}
        for row in reader:
            try:
                value = float(row["rating"])
            except (TypeError, ValueError) as err:
                raise ValueError(f"{path.name}: unreadable rating for {row['prediction_id']}") \
                    from err
            if not math.isfinite(value):
                raise ValueError(f"{path.name}: non-finite rating for {row['prediction_id']}")
            out[row["prediction_id"].strip()] = value
        return out


def smape(forecast: list[float], actual: list[float]) -> float:
    total = 0.0
    for f, a in zip(forecast, actual):
        denominator = abs(f) + abs(a)
        total += 0.0 if denominator == 0 else 2.0 * abs(f - a) / denominator
    return 100.0 * total / len(actual)


def get_score(submission_folder: str = ".") -> float:
    truth = _read(ANSWERS)
    predicted = _read(Path(submission_folder) / "submission.csv")
    missing = set(truth) - set(predicted)
    if missing:
        raise ValueError(f"submission.csv lacks {len(missing)} of the forecasts, e.g. "
                         f"{sorted(missing)[0]}")
    keys = sorted(truth)
    return smape([predicted[k] for k in keys], [truth[k] for k in keys])


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
