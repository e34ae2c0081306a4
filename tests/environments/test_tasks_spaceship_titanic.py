"""The spaceship-titanic task: prepare -> baseline -> reference, a group-wise split."""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from tests import task_checks as th

NAME = "spaceship-titanic"


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return th.prepared_task(NAME, tmp_path_factory.mktemp("cache"))


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_task_loads():
    spec = th.task_spec(NAME)
    assert spec.metric == "accuracy" and spec.direction == "higher"
    assert spec.solve == ["train.py"]


def test_reference_beats_baseline(task, tmp_path):
    th.assert_reference_beats_baseline(task, tmp_path)


def test_split_is_by_travel_group(task):
    train = _rows(task.env_dir / "train.csv")
    test = _rows(task.env_dir / "test.csv")
    train_groups = {r["PassengerId"].split("_")[0] for r in train}
    test_groups = {r["PassengerId"].split("_")[0] for r in test}
    assert train_groups and test_groups and not train_groups & test_groups
    # groups matter: a random row split would have put companions on both sides
    sizes = Counter(r["PassengerId"].split("_")[0] for r in train)
    assert sum(n > 1 for n in sizes.values()) > len(sizes) / 4


def test_no_test_labels_in_workspace(task, tmp_path):
    ws = th.make_workspace(task, tmp_path / "ws")
    th.assert_no_private_data_in(task, ws)
    assert "Transported" not in _rows(ws / "test.csv")[0]


def test_eval_rejects_bad_labels(task, tmp_path):
    ws = th.make_workspace(task, tmp_path / "ws")
    ids = [r["PassengerId"] for r in _rows(ws / "test.csv")]
    (ws / "submission.csv").write_text(
        "PassengerId,Transported\n" + "".join(f"{i},maybe\n" for i in ids)
    )
    result = th.score(task, ws)
    assert result.value is None and "True or False" in result.detail


def test_prepare_is_deterministic(task, tmp_path):
    th.assert_deterministic(task, tmp_path)
