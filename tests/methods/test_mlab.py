"""``methods._mlab``: the one reader behind the CSV tasks' ``eval.py`` (every failure is clear)."""

from __future__ import annotations

import pytest

from methods._mlab import (
    accuracy,
    as_bool,
    as_id,
    as_key,
    binary_label,
    finite_float,
    read_column,
    read_scored,
)


def _csv(path, text):
    path.write_text(text)
    return path


def test_cells_read_as_each_task_spells_them():
    assert as_id("17.0") == as_id("17") == "17"
    assert as_key(" p_01 ") == "p_01"
    assert as_bool("TRUE") is True and as_bool("0.0") is False
    assert binary_label("1.0") == 1
    with pytest.raises(ValueError, match="0 or 1"):
        binary_label("2")
    with pytest.raises(ValueError, match="True or False"):
        as_bool("maybe")
    with pytest.raises(ValueError, match="non-finite"):
        finite_float("nan")


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="submission.csv not found"):
        read_column(tmp_path / "submission.csv", "id", "label", int, as_id)


def test_missing_columns_and_bad_cells_name_the_file_and_row(tmp_path):
    path = _csv(tmp_path / "s.csv", "id,score\n1,2\n")
    with pytest.raises(ValueError, match="must have the columns id,label"):
        read_column(path, "id", "label", int, as_id)
    path = _csv(tmp_path / "s.csv", "id,label\n1,0\n7,x\n")
    with pytest.raises(ValueError, match=r"s.csv: unreadable label for id '7'"):
        read_column(path, "id", "label", binary_label, as_id)


def test_a_submission_that_leaves_out_test_rows_is_refused(tmp_path):
    answers = _csv(tmp_path / "answers.csv", "id,label\n1,0\n2,1\n3,1\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    _csv(ws / "submission.csv", "id,label\n1,0\n")
    with pytest.raises(ValueError, match=r"lacks predictions for 2 test ids, e.g. '2'"):
        read_scored(answers, ws, "id", "label", binary_label, as_id, "test ids")
    _csv(ws / "submission.csv", "id,label\n1.0,0\n2,0\n3,1\n99,1\n")
    truth, predicted = read_scored(answers, ws, "id", "label", binary_label, as_id, "test ids")
    assert accuracy(truth, predicted) == pytest.approx(2 / 3)  # the extra row 99 is ignored
