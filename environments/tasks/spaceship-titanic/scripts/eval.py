"""Score a spaceship-titanic workspace: accuracy of ``submission.csv`` on the hidden labels.

``submission.csv`` has a header ``PassengerId,Transported`` (True/False, or 1/0) and one row
per test passenger. This never runs the workspace's code. A missing submission raises
``FileNotFoundError``; a malformed one ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_bool, as_key, read_scored

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def get_score(submission_folder: str = ".") -> float:
    return accuracy(*read_scored(ANSWERS, submission_folder, "PassengerId", "Transported",
                                 as_bool, as_key, "passengers"))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
