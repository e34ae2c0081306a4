"""The spaceship-titanic task: prepare -> baseline -> reference, a group-wise split."""

from __future__ import annotations

import csv
from collections import Counter

from tests import task_checks as th

NAME = "spaceship-titanic"


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_split_is_by_travel_group(prepared_suite_task):
    task = prepared_suite_task(NAME)
    train = _rows(task.env_dir / "train.csv")
    test = _rows(task.env_dir / "test.csv")
    train_groups = {r["PassengerId"].split("_")[0] for r in train}
    test_groups = {r["PassengerId"].split("_")[0] for r in test}
    assert train_groups and test_groups and not train_groups & test_groups
    # groups matter: a random row split would have put companions on both sides
    sizes = Counter(r["PassengerId"].split("_")[0] for r in train)
    assert sum(n > 1 for n in sizes.values()) > len(sizes) / 4


def test_test_file_has_no_labels(prepared_suite_task):
    task = prepared_suite_task(NAME)
    assert "Transported" not in _rows(task.env_dir / "test.csv")[0]


def test_eval_rejects_bad_labels(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    ws = th.make_workspace(task, tmp_path / "ws")
    ids = [r["PassengerId"] for r in _rows(ws / "test.csv")]
    (ws / "submission.csv").write_text(
        "PassengerId,Transported\n" + "".join(f"{i},maybe\n" for i in ids)
    )
    result = th.score(task, ws)
    assert result.value is None and "True or False" in result.detail


def test_every_split_scores_its_own_groups_in_the_same_direction(prepared_suite_task, tmp_path):
    """test.csv holds the passengers of all three splits, whole travel groups each; each split's
    function scores its own (guessing from CryoSleep beats guessing by the majority on each),
    and test is the 2,062 passengers it always was."""
    task = prepared_suite_task(NAME)
    module = th.load_eval(task)
    test = _rows(task.env_dir / "test.csv")
    members = {s: set(module.split_members(s)) for s in ("search", "select", "test")}
    assert len(members["test"]) == 2062
    assert {r["PassengerId"] for r in test} == set().union(*members.values())
    groups = {s: {i.split("_")[0] for i in m} for s, m in members.items()}
    assert not (groups["search"] & groups["select"] or groups["test"] & (groups["search"]
                                                                            | groups["select"]))
    scores = {}
    for guess in ("majority", "cryosleep"):
        ws = tmp_path / guess
        ws.mkdir()
        labels = [True if guess == "majority" else r["CryoSleep"] == "True" for r in test]
        (ws / "submission.csv").write_text("PassengerId,Transported\n" + "".join(
            f"{r['PassengerId']},{y}\n" for r, y in zip(test, labels)))
        scores[guess] = [module.get_search_score(ws), module.get_select_score(ws),
                         module.get_score(ws)]
    assert all(c > m for c, m in zip(scores["cryosleep"], scores["majority"])), scores
