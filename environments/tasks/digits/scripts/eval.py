"""Score a digits workspace: accuracy of ``submission.csv`` against the private test labels.

``submission.csv`` has a header ``id,label`` and one row per test image. This never runs the
workspace's code. A missing submission raises ``FileNotFoundError``, a malformed one
``ValueError``, each with the reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import accuracy, as_int, read_scored

LABELS = Path(__file__).resolve().parent / "test_labels.csv"


def get_score(submission_folder: str = ".") -> float:
    return accuracy(*read_scored(LABELS, submission_folder, "id", "label", as_int, as_int,
                                 "test ids"))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
