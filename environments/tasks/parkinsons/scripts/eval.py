"""Score a parkinsons workspace: SMAPE of ``submission.csv`` on the hidden ratings (lower is
better).

SMAPE = 100 * mean(2 |F - A| / (|F| + |A|)), with a term of 0 where forecast and actual are
both 0 (the convention of the Kaggle competition this task mirrors). ``submission.csv`` has
the columns prediction_id,rating, one row per id of ``sample_submission.csv``. Each private
split (``task.toml``'s ``[splits]``) scores the forecasts of its own patients: ``get_score`` the
test patients, ``get_search_score`` and ``get_select_score`` the search and select ones; rows
of the other splits are ignored. This never runs the workspace's code. A missing submission
raises ``FileNotFoundError``; a malformed or incomplete one ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import as_key, finite_float, read_column, read_scored

HERE = Path(__file__).resolve().parent
ANSWERS = {"test": HERE / "answers.csv", "search": HERE / "search_answers.csv",
           "select": HERE / "select_answers.csv"}


def smape(forecast: list[float], actual: list[float]) -> float:
    total = 0.0
    for f, a in zip(forecast, actual):
        denominator = abs(f) + abs(a)
        total += 0.0 if denominator == 0 else 2.0 * abs(f - a) / denominator
    return 100.0 * total / len(actual)


def _smape(split: str, submission_folder: str) -> float:
    truth, predicted = read_scored(ANSWERS[split], submission_folder, "prediction_id", "rating",
                                   finite_float, as_key, "forecasts")
    keys = sorted(truth)
    return smape([predicted[k] for k in keys], [truth[k] for k in keys])


def get_score(submission_folder: str = ".") -> float:
    return _smape("test", submission_folder)


def get_search_score(submission_folder: str = ".") -> float:
    return _smape("search", submission_folder)


def get_select_score(submission_folder: str = ".") -> float:
    return _smape("select", submission_folder)


def split_members(split: str) -> list[int]:
    """The patients whose forecasts ``split`` scores (from its private answers)."""
    ids = read_column(ANSWERS[split], "prediction_id", "rating", str, as_key)
    return sorted({int(i.split("_")[0]) for i in ids})


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
