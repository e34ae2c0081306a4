"""A tiny task with the three private splits, for the harness's and the ledger's tests.

A submission writes ``result.txt`` holding three numbers, one a split; each split's private
file under ``scripts/`` says which of the three it reads (so swapping a split's data after a
run changes what it scores, and its hash). ``writes(search, select, test)`` is a solve script
that scores exactly those values.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.conftest import write_task

SPLIT_TOML = textwrap.dedent("""
    metric = "total"
    direction = "higher"
    baseline = 6.0
    solve = ["train.py"]
    [feedback]
    kind = "validation"
    budget = 3
    [splits.search]
    about = "the first number of result.txt"
    data = ["search.key"]
    [splits.select]
    about = "the second number of result.txt"
    data = ["select.key"]
    [splits.test]
    about = "the third number of result.txt"
    data = ["test.key"]
""")

SPLIT_EVAL = textwrap.dedent("""
    import os
    HERE = os.path.dirname(os.path.abspath(__file__))
    def _read(folder, split):
        path = os.path.join(folder, "result.txt")
        if not os.path.exists(path):
            raise FileNotFoundError("no result.txt")
        index = int(open(os.path.join(HERE, split + ".key")).read())
        return float(open(path).read().split()[index])
    def get_score(submission_folder):
        return _read(submission_folder, "test")
    def get_search_score(submission_folder):
        return _read(submission_folder, "search")
    def get_select_score(submission_folder):
        return _read(submission_folder, "select")
    def split_members(split):
        return [split]
""")


def writes(search: float, select: float, test: float) -> str:
    """A solve script whose result scores ``search``, ``select`` and ``test`` on the splits."""
    return (f"open('result.txt', 'w').write('{search} {select} {test}')\n"
            f"print('validation total {search}')\n")


def write_split_task(root: Path) -> Path:
    task = write_task(root, toml=SPLIT_TOML, eval_body=SPLIT_EVAL)
    for i, split in enumerate(("search", "select", "test")):
        (task / "scripts" / f"{split}.key").write_text(str(i))
    (task / "env" / "train.py").write_text(writes(1, 1, 1))
    return task
