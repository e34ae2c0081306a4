"""The parkinsons task: prepare -> baseline -> reference; forecasts scored by SMAPE."""

from __future__ import annotations

import csv

import numpy as np
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


def test_every_split_scores_its_own_patients_in_the_same_direction(prepared_suite_task, tmp_path):
    """sample_submission.csv asks for the forecasts of all three splits' patients; each split's
    function scores its own (each part's training median beats forecasting 0 on each), and test
    is the patients 5000-5249 it always was."""
    task = prepared_suite_task(NAME)
    module = th.load_eval(task)
    wanted = [r["prediction_id"] for r in _rows(task.env_dir / "sample_submission.csv")]
    members = {s: set(module.split_members(s)) for s in ("search", "select", "test")}
    assert members["test"] <= set(range(5000, 5250)) and len(members["test"]) > 240
    assert {int(w.split("_")[0]) for w in wanted} == set().union(*members.values())
    train = _rows(task.env_dir / "train_clinical.csv")
    median = {p: float(np.median([float(r[f"updrs_{p}"]) for r in train])) for p in "1234"}
    scores = {}
    for guess in ("zero", "median"):
        ws = tmp_path / guess
        ws.mkdir()
        (ws / "submission.csv").write_text("prediction_id,rating\n" + "".join(
            f"{w},{0.0 if guess == 'zero' else median[w[-1]]}\n" for w in wanted))
        scores[guess] = [module.get_search_score(ws), module.get_select_score(ws),
                         module.get_score(ws)]
    assert all(m < z for m, z in zip(scores["median"], scores["zero"])), scores
