"""The clrs-sorting task: prepare -> baseline -> reference; held-out sizes larger than training."""

from __future__ import annotations

import numpy as np

from tests import task_checks as th

NAME = "clrs-sorting"


def test_test_sets_are_larger_than_training_sets(prepared_suite_task):
    task = prepared_suite_task(NAME)
    train = np.load(task.env_dir / "train.npz")
    test = np.load(task.env_dir / "test.npz")
    assert train["mask"].sum(1).max() < test["mask"].sum(1).min()
    assert set(test) == {"x", "mask"}


def test_successors_follow_one_hidden_order(prepared_suite_task):
    """Successor pointers form one chain per set: every item but the last is pointed to once."""
    task = prepared_suite_task(NAME)
    train = np.load(task.env_dir / "train.npz")
    for successor, mask in zip(train["successor"][:50], train["mask"][:50]):
        items = np.flatnonzero(mask)
        targets = successor[items]
        assert set(targets) <= set(items)
        assert (targets == items).sum() == 1  # the largest points to itself
        assert len(set(targets)) == len(items) - 1


def test_eval_rejects_an_incomplete_submission(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    ws = th.make_workspace(task, tmp_path / "ws")
    (ws / "submission.csv").write_text("example,item,successor\n0,0,1\n")
    result = th.score(task, ws)
    assert result.value is None and "lacks successors" in result.detail
