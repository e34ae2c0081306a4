"""The ogbn-arxiv task: prepare -> baseline -> reference on a generated homophilous graph."""

from __future__ import annotations

import numpy as np

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
