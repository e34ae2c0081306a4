"""Score an ogbn-arxiv workspace: accuracy of ``submission.csv`` (node,label) on test papers.

This never runs the workspace's code. A missing submission raises ``FileNotFoundError``; a
malformed one or one lacking test papers ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_int, read_scored

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def get_score(submission_folder: str = ".") -> float:
    return accuracy(*read_scored(ANSWERS, submission_folder, "node", "label", as_int, as_int,
                                 "test papers"))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
