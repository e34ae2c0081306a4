"""The Run screen's status line."""

from __future__ import annotations

from environments.runs import RunMeta, Totals
from tui.widgets.status_line import status_text


def test_status_line_shows_budget_time_left_as_a_clock_and_the_state():
    meta = RunMeta(run_id="r", task="digits", task_root="/x", actor="agent", model="openai/gpt-x",
                   limits={"max_steps": 50, "max_time": 14400}, status="running",
                   totals=Totals(steps=7, seconds=45.0, retries=2))
    text = status_text(meta, paused=True)
    assert "step 7/50" in text and "3:59:15 left" in text and "retries 2" in text
    assert text.endswith("[b]paused[/b]")
    assert "left" not in status_text(meta.model_copy(update={"limits": {}}))
