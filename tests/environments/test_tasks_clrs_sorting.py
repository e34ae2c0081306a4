"""The clrs-sorting task: prepare -> baseline -> reference; held-out sizes larger than training."""

from __future__ import annotations

import numpy as np
import pytest

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


def _submission(ws, rows):
    ws.mkdir()
    lines = ["example,item,successor"] + [f"{e},{i},{s}" for e, i, s in rows]
    (ws / "submission.csv").write_text("\n".join(lines) + "\n")
    return ws


def test_every_split_is_scored_on_its_own_rows(prepared_suite_task, tmp_path):
    """Perfect pointers score 1 on each split; a submission with the test rows only scores test
    and is refused on search (the search rows are its own, past the test ones)."""
    task = prepared_suite_task(NAME)
    ev = th.load_eval(task)
    perfect, test_only = [], []
    for split in ("test", "search", "select"):
        examples, successor = ev._answers(split)
        for e, row in zip(examples, successor):
            rows = [(int(e), i, int(s)) for i, s in enumerate(row) if s >= 0]
            perfect += rows
            test_only += rows if split == "test" else []
    ws = _submission(tmp_path / "perfect", perfect)
    assert ev.get_score(ws) == ev.get_search_score(ws) == ev.get_select_score(ws) == 1.0
    ws = _submission(tmp_path / "test-only", test_only)
    assert ev.get_score(ws) == 1.0
    with pytest.raises(ValueError, match="lacks successors for .* search items"):
        ev.get_search_score(ws)
