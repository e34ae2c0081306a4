"""The ogbn-arxiv task: prepare -> baseline -> reference on a generated homophilous graph."""

from __future__ import annotations

import numpy as np
import pytest

from tests import task_checks as th

NAME = "ogbn-arxiv"


def test_graph_is_homophilous_and_time_split(prepared_suite_task):
    task = prepared_suite_task(NAME)
    data = np.load(task.env_dir / "graph.npz")
    labels, edges, year = data["labels"], data["edges"], data["year"]
    known = (labels[edges[:, 0]] >= 0) & (labels[edges[:, 1]] >= 0)
    same = (labels[edges[:, 0]] == labels[edges[:, 1]])[known].mean()
    assert same > 0.6  # far above the ~1/8 of a random graph
    assert year[data["train_idx"]].max() < year[data["test_idx"]].min()
    assert (labels[data["test_idx"]] == -1).all()
    assert (labels[data["train_idx"]] >= 0).all()


def test_every_split_is_scored_on_its_own_papers(prepared_suite_task, tmp_path):
    """The search and select papers are new ones after the first 5,000 (whose test papers stay
    the test split); a submission must predict all of test_idx, and each split reads its own."""
    task = prepared_suite_task(NAME)
    ev = th.load_eval(task)
    members = {s: ev.split_members(s) for s in ("search", "select", "test")}
    assert max(members["test"]) < 5000 <= min(members["search"] + members["select"])
    test_idx = np.load(task.env_dir / "graph.npz")["test_idx"]
    assert sorted(test_idx.tolist()) == sorted(sum(members.values(), []))
    (tmp_path / "submission.csv").write_text("node,label\n" + "".join(
        f"{v},0\n" for v in members["test"]))
    assert 0.0 <= ev.get_score(tmp_path) < 0.5
    with pytest.raises(ValueError, match="lacks predictions for 500 search papers"):
        ev.get_search_score(tmp_path)
    (tmp_path / "submission.csv").write_text("node,label\n" + "".join(
        f"{v},0\n" for v in test_idx))
    for score in (ev.get_search_score, ev.get_select_score):
        assert 0.0 <= score(tmp_path) < 0.5  # one area for all: a minority in every split
