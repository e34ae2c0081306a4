"""The Run screen's status line."""

from __future__ import annotations

from environments.record.runs import RunMeta, Totals
from tui.widgets.status_line import status_text


def test_status_line_shows_budget_time_left_as_a_clock_and_the_state():
    meta = RunMeta(run_id="r", task="digits", task_root="/x", actor="agent", model="openai/gpt-x",
                   limits={"max_steps": 50, "max_time": 14400}, status="running",
                   totals=Totals(steps=7, seconds=45.0, retries=2))
    text = status_text(meta.model_copy(update={"totals": Totals(
        steps=7, seconds=45.0, retries=2, tokens_in=123_456, tokens_out=950)}), paused=True).plain
    assert "step 7/50" in text and "3:59:15 left" in text and "retries 2" in text
    assert text.startswith("digits · paused · openai/gpt-x")  # a narrow terminal cuts the end
    assert "tokens 123.5k/950 ·" in text
    assert "left" not in status_text(meta.model_copy(update={"budgets": {}})).plain


def test_status_line_shows_a_bracketed_model_string_as_typed():
    meta = RunMeta(run_id="r", task="t[x]", task_root="/x", actor="agent", model="scripted/[/INST].txt")
    assert status_text(meta).plain.startswith("t[x] · created · scripted/[/INST].txt · ")
