"""The house-price task: prepare -> baseline -> reference, hidden prices, messy columns."""

from __future__ import annotations

import csv

import numpy as np

from tests import task_checks as th

NAME = "house-price"


def test_data_has_categories_and_missing_values(prepared_suite_task):
    task = prepared_suite_task(NAME)
    with (task.env_dir / "train.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len({r["Neighborhood"] for r in rows}) >= 10
    missing = sum(r["LotFrontage"] == "" for r in rows) / len(rows)
    assert 0.1 < missing < 0.3
    with (task.env_dir / "test.csv").open() as fh:
        header = next(csv.reader(fh))
    assert "SalePrice" not in header


def test_eval_rejects_a_missing_submission(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    result = th.score(task, th.make_workspace(task, tmp_path / "ws"))
    assert result.value is None and result.failure == "no_submission"


def test_every_split_scores_its_own_houses_in_the_same_direction(prepared_suite_task, tmp_path):
    """test.csv holds the houses of all three splits; each split's function scores its own (a
    guess from living area beats a constant one on each), and test is the 800 it always was."""
    task = prepared_suite_task(NAME)
    module = th.load_eval(task)
    with (task.env_dir / "train.csv").open() as fh:
        train = list(csv.DictReader(fh))
    with (task.env_dir / "test.csv").open() as fh:
        test = list(csv.DictReader(fh))
    members = {s: set(module.split_members(s)) for s in ("search", "select", "test")}
    assert members["test"] == set(range(1201, 2001))
    assert {int(r["Id"]) for r in test} == set().union(*members.values())
    area = np.array([float(r["GrLivArea"]) for r in train])
    slope, intercept = np.polyfit(area, [float(r["SalePrice"]) for r in train], 1)
    scores = {}
    for guess in ("constant", "area"):
        ws = tmp_path / guess
        ws.mkdir()
        price = [180000.0 if guess == "constant" else intercept + slope * float(r["GrLivArea"])
                 for r in test]
        rows = [f"{r['Id']},{p}" for r, p in zip(test, price)]
        (ws / "submission.csv").write_text("Id,SalePrice\n" + "\n".join(rows) + "\n")
        scores[guess] = [module.get_search_score(ws), module.get_select_score(ws),
                         module.get_score(ws)]
    assert all(np.isfinite(scores["area"])) and all(np.less(scores["area"], scores["constant"]))
