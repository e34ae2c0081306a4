"""The clrs-sorting task: prepare -> baseline -> reference; held-out sizes larger than training."""

from __future__ import annotations

import numpy as np
import pytest

from tests import task_checks as th

NAME = "clrs-sorting"


@pytest.fixture
def task(prepared_suite_task):
    return prepared_suite_task(NAME)


def test_task_loads():
    spec = th.task_spec(NAME)
    assert spec.metric == "pointer_accuracy" and spec.solve == ["train.py"]


def test_test_sets_are_larger_than_training_sets(task):
    train = np.load(task.env_dir / "train.npz")
    test = np.load(task.env_dir / "test.npz")
    assert train["mask"].sum(1).max() < test["mask"].sum(1).min()
    assert set(test) == {"x", "mask"}


def test_successors_follow_one_hidden_order(task):
    """Successor pointers form one chain per set: every item but the last is pointed to once."""
    train = np.load(task.env_dir / "train.npz")
    for successor, mask in zip(train["successor"][:50], train["mask"][:50]):
        items = np.flatnonzero(mask)
        targets = successor[items]
        assert set(targets) <= set(items)
        assert (targets == items).sum() == 1  # the largest points to itself
        assert len(set(targets)) == len(items) - 1


def test_eval_rejects_an_incomplete_submission(task, tmp_path):
    ws = th.make_workspace(task, tmp_path / "ws")
    (ws / "submission.csv").write_text("example,item,successor\n0,0,1\n")
    result = th.score(task, ws)
    assert result.value is None and "lacks successors" in result.detail
