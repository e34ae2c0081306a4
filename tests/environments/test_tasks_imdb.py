"""The imdb task: prepare -> baseline -> reference on generated reviews with real structure."""

from __future__ import annotations

import csv

from tests import task_checks as th

NAME = "imdb"


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_baseline_leaves_clear_headroom():
    """The bag-of-words baseline (held to this value by the suite's check-task)."""
    assert th.task_spec(NAME).baseline < 0.8


def test_test_file_has_no_labels(prepared_suite_task):
    task = prepared_suite_task(NAME)
    assert list(_rows(task.env_dir / "test.csv")[0]) == ["id", "text"]


def test_corpus_has_negation_contrast_and_both_classes(prepared_suite_task):
    task = prepared_suite_task(NAME)
    rows = _rows(task.env_dir / "train.csv")
    texts = [r["text"] for r in rows]
    assert sum(" not " in t or " never " in t for t in texts) > len(texts) / 4
    assert sum(" . but " in t or " . however " in t for t in texts) > len(texts) / 10
    positive = sum(r["label"] == "1" for r in rows) / len(rows)
    assert 0.35 < positive < 0.65
    # a sentiment word is evidence for both classes, depending on its context
    with_good = [r["label"] for r in rows if " good " in f" {r['text']} "]
    assert 0.2 < with_good.count("0") / len(with_good) < 0.8
