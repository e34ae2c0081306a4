"""The parkinsons task: prepare -> baseline -> reference; forecasts scored by SMAPE."""

from __future__ import annotations

import csv

import pytest

from tests import task_checks as th

NAME = "parkinsons"


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_smape_convention():
    module = th.load_eval(th.task_spec(NAME))
    assert module.smape([0.0, 5.0], [0.0, 5.0]) == 0.0
    assert module.smape([1.0], [0.0]) == 200.0
    assert module.smape([3.0], [1.0]) == pytest.approx(100.0)


def test_test_patients_are_seen_only_up_to_month_12(prepared_suite_task, tmp_path):
    task = prepared_suite_task(NAME)
    ws = th.make_workspace(task, tmp_path / "ws")
    months = {int(r["visit_month"]) for r in _rows(ws / "test_clinical.csv")}
    assert months == {0, 6, 12}
    test_patients = {r["patient_id"] for r in _rows(ws / "test_clinical.csv")}
    train_patients = {r["patient_id"] for r in _rows(ws / "train_clinical.csv")}
    assert not test_patients & train_patients
    wanted = {r["prediction_id"].split("_")[1] for r in _rows(ws / "sample_submission.csv")}
    assert wanted == {"18", "24", "36"}
