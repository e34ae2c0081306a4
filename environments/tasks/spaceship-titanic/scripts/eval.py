"""Score a spaceship-titanic workspace: accuracy of ``submission.csv`` on the hidden labels.

``submission.csv`` has a header ``PassengerId,Transported`` (True/False, or 1/0) and one row
per passenger of ``test.csv``. Each private split (``task.toml``'s ``[splits]``) scores the rows
of its own passengers: ``get_score`` the test passengers, ``get_search_score`` and
``get_select_score`` the search and select ones; rows of the other splits are ignored. This
never runs the workspace's code. A missing submission raises ``FileNotFoundError``; a malformed
one ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_bool, as_key, read_column, read_scored

HERE = Path(__file__).resolve().parent
ANSWERS = {"test": HERE / "answers.csv", "search": HERE / "search_answers.csv",
           "select": HERE / "select_answers.csv"}


def _accuracy(split: str, submission_folder: str) -> float:
    return accuracy(*read_scored(ANSWERS[split], submission_folder, "PassengerId", "Transported",
                                 as_bool, as_key, "passengers"))


def get_score(submission_folder: str = ".") -> float:
    return _accuracy("test", submission_folder)


def get_search_score(submission_folder: str = ".") -> float:
    return _accuracy("search", submission_folder)


def get_select_score(submission_folder: str = ".") -> float:
    return _accuracy("select", submission_folder)


def split_members(split: str) -> list[str]:
    """The PassengerIds ``split`` scores (from its private answers; whole travel groups)."""
    return sorted(read_column(ANSWERS[split], "PassengerId", "Transported", str, as_key))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
