"""Score an imdb workspace: accuracy of ``submission.csv`` (id,label) on the hidden labels.

Labels are 1 (positive) or 0 (negative), one row per review of ``test.csv``. Each private split
(``task.toml``'s ``[splits]``) scores the rows of its own reviews: ``get_score`` the test
reviews, ``get_search_score`` and ``get_select_score`` the search and select ones; rows of the
other splits are ignored. This never runs the workspace's code. A missing submission raises
``FileNotFoundError``; a malformed one ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_id, binary_label, read_column, read_scored

HERE = Path(__file__).resolve().parent
ANSWERS = {"test": HERE / "answers.csv", "search": HERE / "search_answers.csv",
           "select": HERE / "select_answers.csv"}


def _accuracy(split: str, submission_folder: str) -> float:
    return accuracy(*read_scored(ANSWERS[split], submission_folder, "id", "label", binary_label,
                                 as_id, f"{split} reviews"))


def get_score(submission_folder: str = ".") -> float:
    return _accuracy("test", submission_folder)


def get_search_score(submission_folder: str = ".") -> float:
    return _accuracy("search", submission_folder)


def get_select_score(submission_folder: str = ".") -> float:
    return _accuracy("select", submission_folder)


def split_members(split: str) -> list[int]:
    """The ids of the reviews ``split`` scores (from its private answers)."""
    return sorted(int(i) for i in read_column(ANSWERS[split], "id", "label", str, as_id))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
