"""Score a parkinsons workspace: SMAPE of ``submission.csv`` on the hidden ratings (lower is
better).

SMAPE = 100 * mean(2 |F - A| / (|F| + |A|)), with a term of 0 where forecast and actual are
both 0 (the convention of the Kaggle competition this task mirrors). ``submission.csv`` has
the columns prediction_id,rating. This never runs the workspace's code. A missing submission
raises ``FileNotFoundError``; a malformed or incomplete one ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import as_key, finite_float, read_scored

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def smape(forecast: list[float], actual: list[float]) -> float:
    total = 0.0
    for f, a in zip(forecast, actual):
        denominator = abs(f) + abs(a)
        total += 0.0 if denominator == 0 else 2.0 * abs(f - a) / denominator
    return 100.0 * total / len(actual)


def get_score(submission_folder: str = ".") -> float:
    truth, predicted = read_scored(ANSWERS, submission_folder, "prediction_id", "rating",
                                   finite_float, as_key, "forecasts")
    keys = sorted(truth)
    return smape([predicted[k] for k in keys], [truth[k] for k in keys])


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
