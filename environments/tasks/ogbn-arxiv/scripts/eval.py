"""Score an ogbn-arxiv workspace: accuracy of ``submission.csv`` (node,label) on test papers.

The private splits (task.toml [splits], made by prepare.py): ``test`` is the 2019-2020 papers
among the first 5,000 (answers.csv, as always); ``search`` and ``select`` are the 500 papers each
that prepare.py adds after them (search_answers.csv, select_answers.csv). Each split's function
scores its own papers only, and needs every one of them predicted.

This never runs the workspace's code. A missing submission raises ``FileNotFoundError``; a
malformed one or one lacking test papers ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_int, read_column, read_scored

HERE = Path(__file__).resolve().parent
ANSWERS = HERE / "answers.csv"
SPLIT_ANSWERS = {"search": HERE / "search_answers.csv", "select": HERE / "select_answers.csv",
                 "test": ANSWERS}


def split_members(split: str) -> list[int]:
    """The papers (node ids) ``split`` is made of."""
    return sorted(read_column(SPLIT_ANSWERS[split], "node", "label", as_int, as_int))


def split_score(submission_folder: str, split: str) -> float:
    return accuracy(*read_scored(SPLIT_ANSWERS[split], submission_folder, "node", "label",
                                 as_int, as_int, f"{split} papers"))


def get_score(submission_folder: str = ".") -> float:
    return split_score(submission_folder, "test")


def get_search_score(submission_folder: str = ".") -> float:
    return split_score(submission_folder, "search")


def get_select_score(submission_folder: str = ".") -> float:
    return split_score(submission_folder, "select")


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
