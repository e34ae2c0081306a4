"""Score an imdb workspace: accuracy of ``submission.csv`` (id,label) on the hidden labels.

Labels are 1 (positive) or 0 (negative), one row per test review. This never runs the
workspace's code. A missing submission raises ``FileNotFoundError``; a malformed one
``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_id, binary_label, read_scored

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def get_score(submission_folder: str = ".") -> float:
    return accuracy(*read_scored(ANSWERS, submission_folder, "id", "label", binary_label, as_id,
                                 "test reviews"))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
