"""The imdb task: prepare -> baseline -> reference on generated reviews with real structure."""

from __future__ import annotations

import csv

import pytest

from tests import task_checks as th

NAME = "imdb"


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return th.prepared_task(NAME, tmp_path_factory.mktemp("cache"))


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_task_loads():
    spec = th.task_spec(NAME)
    assert spec.metric == "accuracy" and spec.solve == ["train.py"]


def test_reference_beats_baseline(task, tmp_path):
    base, ref = th.assert_reference_beats_baseline(task, tmp_path)
    assert base < 0.8, "the bag-of-words baseline must leave clear headroom"


def test_corpus_has_negation_contrast_and_both_classes(task):
    rows = _rows(task.env_dir / "train.csv")
    texts = [r["text"] for r in rows]
    assert sum(" not " in t or " never " in t for t in texts) > len(texts) / 4
    assert sum(" . but " in t or " . however " in t for t in texts) > len(texts) / 10
    positive = sum(r["label"] == "1" for r in rows) / len(rows)
    assert 0.35 < positive < 0.65
    # a sentiment word is evidence for both classes, depending on its context
    with_good = [r["label"] for r in rows if " good " in f" {r['text']} "]
    assert 0.2 < with_good.count("0") / len(with_good) < 0.8


def test_no_test_labels_in_workspace(task, tmp_path):
    ws = th.make_workspace(task, tmp_path / "ws")
    th.assert_no_private_data_in(task, ws)
    assert list(_rows(ws / "test.csv")[0]) == ["id", "text"]


def test_prepare_is_deterministic(task, tmp_path):
    th.assert_deterministic(task, tmp_path)
