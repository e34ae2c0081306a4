"""The spaceship-titanic task: prepare -> baseline -> reference, a group-wise split."""

from __future__ import annotations

import csv
from collections import Counter

from tests import task_checks as th

NAME = "spaceship-titanic"


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_split_is_by_travel_group(prepared_suite_task):
    task = prepared_suite_task(NAME)
    train = _rows(task.env_dir / "train.csv")
    test = _rows(task.env_dir / "test.csv")
    train_groups = {r["PassengerId"].split("_")[0] for r in train}
    test_groups = {r["PassengerId"].split("_")[0] for r in test}
    assert train_groups and test_groups and not train_groups & test_groups
    # groups matter: a random row split would have put companions on both sides
    sizes = Counter(r["PassengerId"].split("_")[0] for r in train)
    assert sum(n > 1 for n in sizes.values()) > len(sizes) / 4


def test_test_file_has_no_labels(prepared_suite_task):
    task = prepared_suite_task(NAME)
    assert "Transported" not in _rows(task.env_dir / "test.csv")[0]


def test_eval_rejects_bad_labels(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    ws = th.make_workspace(task, tmp_path / "ws")
    ids = [r["PassengerId"] for r in _rows(ws / "test.csv")]
    (ws / "submission.csv").write_text(
        "PassengerId,Transported\n" + "".join(f"{i},maybe\n" for i in ids)
    )
    result = th.score(task, ws)
    assert result.value is None and "True or False" in result.detail
