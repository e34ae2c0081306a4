"""Score a house-price workspace: mean absolute error of ``submission.csv`` (lower is better).

``submission.csv`` has a header ``Id,SalePrice`` and one row per house of ``test.csv``. Each
private split (``task.toml``'s ``[splits]``) scores the rows of its own houses: ``get_score``
the test houses, ``get_search_score`` and ``get_select_score`` the search and select ones; rows
of the other splits are ignored. This never runs the workspace's code. A missing submission
raises ``FileNotFoundError``; missing ids or non-finite prices raise ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import as_id, finite_float, read_column, read_scored

HERE = Path(__file__).resolve().parent
ANSWERS = {"test": HERE / "answers.csv", "search": HERE / "search_answers.csv",
           "select": HERE / "select_answers.csv"}


def _mae(split: str, submission_folder: str) -> float:
    truth, predicted = read_scored(ANSWERS[split], submission_folder, "Id", "SalePrice",
                                   finite_float, as_id, f"{split} ids")
    return sum(abs(predicted[i] - y) for i, y in truth.items()) / len(truth)


def get_score(submission_folder: str = ".") -> float:
    return _mae("test", submission_folder)


def get_search_score(submission_folder: str = ".") -> float:
    return _mae("search", submission_folder)


def get_select_score(submission_folder: str = ".") -> float:
    return _mae("select", submission_folder)


def split_members(split: str) -> list[int]:
    """The Ids of the houses ``split`` scores (from its private answers)."""
    return sorted(int(i) for i in read_column(ANSWERS[split], "Id", "SalePrice", str, as_id))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
