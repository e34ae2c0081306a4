"""Score a digits workspace: accuracy of ``submission.csv`` against the private labels.

``submission.csv`` has a header ``id,label`` and one row per image of ``test.csv``. Each private
split (``task.toml``'s ``[splits]``) scores the rows of its own images: ``get_score`` the test
images, ``get_search_score`` and ``get_select_score`` the search and select ones; rows of the
other splits are ignored. This never runs the workspace's code. A missing submission raises
``FileNotFoundError``, a malformed one ``ValueError``, each with the reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_int, read_column, read_scored

HERE = Path(__file__).resolve().parent
LABELS = {"test": HERE / "test_labels.csv", "search": HERE / "search_labels.csv",
          "select": HERE / "select_labels.csv"}


def _accuracy(split: str, submission_folder: str) -> float:
    return accuracy(*read_scored(LABELS[split], submission_folder, "id", "label", as_int, as_int,
                                 f"{split} ids"))


def get_score(submission_folder: str = ".") -> float:
    return _accuracy("test", submission_folder)


def get_search_score(submission_folder: str = ".") -> float:
    return _accuracy("search", submission_folder)


def get_select_score(submission_folder: str = ".") -> float:
    return _accuracy("select", submission_folder)


def split_members(split: str) -> list[int]:
    """The ids of the images ``split`` scores (from its private labels)."""
    return sorted(read_column(LABELS[split], "id", "label", as_int, as_int))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
