"""Score a house-price workspace: mean absolute error of ``submission.csv`` (lower is better).

``submission.csv`` has a header ``Id,SalePrice`` and one row per test house. This never runs
the workspace's code. A missing submission raises ``FileNotFoundError``; missing ids or
non-finite prices raise ``ValueError``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from methods._mlab import as_id, finite_float, read_scored

ANSWERS = Path(__file__).resolve().parent / "answers.csv"


def get_score(submission_folder: str = ".") -> float:
    truth, predicted = read_scored(ANSWERS, submission_folder, "Id", "SalePrice", finite_float,
                                   as_id, "test ids")
    return sum(abs(predicted[i] - y) for i, y in truth.items()) / len(truth)


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
