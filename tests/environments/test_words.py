"""One spelling of a number for people (issue 42.8): a metric value, an improvement, a count,
a failure's detail; and the places that print them use it."""

from __future__ import annotations

import pytest

from environments.reports.family import _value
from environments.reports.table import pct
from environments.scoring.score import Score
from environments.untrusted.words import failure_text, gain, metric, plural


@pytest.mark.parametrize("x, text", [(45377.4, "45,377"), (45224.0, "45,224"), (0.6712, "0.6712"),
                                     (-12345.6, "-12,346"), (None, "n/a")])
def test_a_metric_value_has_one_spelling(x, text):
    assert metric(x) == text


def test_an_improvement_has_one_spelling_in_every_report():
    assert gain(0.1963) == "+19.6%" and gain(None) == "n/a"
    assert pct(0.1963) == "+19.6%"
    s = Score(task="t", metric="rmse", direction="lower", value=45377.4, baseline=56440.0,
              improvement=0.1963, success=True, threshold=0.1)
    assert _value(s).startswith("45,377 (+19.6%")  # report family: was 4.538e+04 (+20%)


def test_counts_are_plural_only_when_they_are_many():
    assert [plural(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
    assert plural(1, "step") == "1 step" and plural(3, "try", "tries") == "3 tries"


def test_a_failure_detail_is_one_line_never_a_traceback():
    detail = ("no result.txt\nTraceback (most recent call last):\n  File \"/task/scripts/eval.py\", "
              "line 6, in get_score\n    raise FileNotFoundError(\"no result.txt\")\nFileNotFoundError: no result.txt")
    assert failure_text(detail) == "no result.txt"
    only = detail.split("\n", 1)[1]
    assert failure_text(only) == "FileNotFoundError: no result.txt"
    assert len(failure_text("x" * 1000, 50)) == 50


def test_a_score_against_a_mean_of_seeds_says_so_where_it_is_shown(capsys):
    from environments.scoring.baselines import Measured, measured_why
    from tui.cli.common import print_score
    from tui.scoring import score_line

    why = measured_why(Measured(task="t", values=[0.69, 0.67, 0.713], mean=0.691, std=0.0215), "on local")
    s = Score(task="t", metric="accuracy", direction="higher", value=0.671, baseline=0.691,
              improvement=-0.029, success=False, threshold=0.1, baseline_source="stored", baseline_why=why)
    assert "mean of 3 runs" in score_line(s) and "noise" in score_line(s)
    print_score(s)
    said = " ".join(capsys.readouterr().out.split())
    assert "-2.9%" in said and "mean of 3 runs" in said and "± 0.0215 (std)" in said and "noise" in said
