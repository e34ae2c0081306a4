"""The imdb task: prepare -> baseline -> reference on generated reviews with real structure."""

from __future__ import annotations

import csv
from collections import defaultdict

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


def test_every_split_scores_its_own_reviews_in_the_same_direction(prepared_suite_task, tmp_path):
    """test.csv holds the reviews of all three splits; each split's function scores its own (a
    per-word vote learnt from train.csv beats calling every review positive on each), and test
    is the 2,000 it always was."""
    task = prepared_suite_task(NAME)
    module = th.load_eval(task)
    train, test = _rows(task.env_dir / "train.csv"), _rows(task.env_dir / "test.csv")
    members = {s: set(module.split_members(s)) for s in ("search", "select", "test")}
    assert members["test"] == set(range(4000, 6000))
    assert {int(r["id"]) for r in test} == set().union(*members.values())
    votes: dict[str, list[int]] = defaultdict(list)
    for r in train:
        for word in set(r["text"].split()):
            votes[word].append(2 * int(r["label"]) - 1)
    lean = {w: sum(v) / len(v) for w, v in votes.items()}
    scores = {}
    for guess in ("positive", "votes"):
        ws = tmp_path / guess
        ws.mkdir()
        labels = [1 if guess == "positive" else
                  int(sum(lean.get(w, 0.0) for w in set(r["text"].split())) > 0) for r in test]
        (ws / "submission.csv").write_text(
            "id,label\n" + "".join(f"{r['id']},{y}\n" for r, y in zip(test, labels)))
        scores[guess] = [module.get_search_score(ws), module.get_select_score(ws),
                         module.get_score(ws)]
    assert all(v > p + 0.05 for v, p in zip(scores["votes"], scores["positive"])), scores
