"""The ogbn-arxiv task: prepare -> baseline -> reference on a generated homophilous graph."""

from __future__ import annotations

import numpy as np
import pytest

from tests import task_checks as th

NAME = "ogbn-arxiv"


@pytest.fixture
def task(prepared_suite_task):
    return prepared_suite_task(NAME)


def test_task_loads():
    spec = th.task_spec(NAME)
    assert spec.metric == "accuracy" and spec.solve == ["train.py"]
    assert spec.is_read_only("graph.npz")


def test_graph_is_homophilous_and_time_split(task):
    data = np.load(task.env_dir / "graph.npz")
    labels, edges, year = data["labels"], data["edges"], data["year"]
    known = (labels[edges[:, 0]] >= 0) & (labels[edges[:, 1]] >= 0)
    same = (labels[edges[:, 0]] == labels[edges[:, 1]])[known].mean()
    assert same > 0.6  # far above the ~1/8 of a random graph
    assert year[data["train_idx"]].max() < year[data["test_idx"]].min()
    assert (labels[data["test_idx"]] == -1).all()
    assert (labels[data["train_idx"]] >= 0).all()
