"""The house-price task: prepare -> baseline -> reference, hidden prices, messy columns."""

from __future__ import annotations

import csv

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
