"""A whole human episode on a suite task, driven through the TUI and checked in the trace.

The task is house-price: its Final Answer is scored at once (a workspace without a
submission.csv fails fast), where a timed task's scoring would take most of a minute."""

from __future__ import annotations

import pytest

from environments.record.runs import RunDir
from tests.tui.conftest import SIZE, click, settle, wait_for
from tui.screens.ask import AskScreen
from tui.screens.run import RunScreen
from tui.widgets.action_form import ActionForm


async def submit(app, pilot, action: str, **values) -> None:
    screen = app.screen
    form: ActionForm = await screen.open_form(action)
    await pilot.pause()
    for name, value in values.items():
        form.set_value(name, value)
    await click(pilot, "#form-submit")
    await settle(app, pilot)


@pytest.mark.slow  # a whole suite-task episode through the TUI (~12 s); test_human_actor.py holds each part
async def test_human_episode_on_a_suite_task_is_recorded_like_an_agent_run(app, tmp_path):
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tasks = app.screen
        names = [t.name for t in tasks.tasks]
        tasks.query_one("#tasks-table").move_cursor(row=names.index("house-price"))
        await pilot.pause()
        await click(pilot, "#start-human")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))  # it names the task
        await pilot.press("y")
        await settle(app, pilot)
        assert isinstance(app.screen, RunScreen)
        run_screen = app.screen
        await submit(app, pilot, "Write File", file_name="hello.py", content="print('hi from a person')\n")
        await submit(app, pilot, "Execute Script", script_name="hello.py")
        # a bad submission shows the validation error and records nothing
        form = await run_screen.open_form("Inspect Script Lines")
        await pilot.pause()
        form.set_value("script_name", "hello.py")
        form.set_value("start_line_number", "one")
        form.set_value("end_line_number", "2")
        await click(pilot, "#form-submit")
        await settle(app, pilot)
        assert len(run_screen.steps) == 2
        assert "start_line_number" in str(form.query_one("#form-error").render())
        await submit(app, pilot, "Final Answer", final_answer="said hi")
        assert [s.action for s in run_screen.steps] == ["Write File", "Execute Script", "Final Answer"]
        await pilot.press("h")  # walk back one step with the keyboard
        await pilot.pause()
        assert run_screen.current == 2
    run = RunDir.open(next((tmp_path / "runs").iterdir()))
    steps = run.steps()
    assert [s.action for s in steps] == ["Write File", "Execute Script", "Final Answer"]
    assert all(s.actor == "human" for s in steps)
    assert "hi from a person" in steps[1].observation
    assert run.meta.status == "finished" and run.meta.final_answer == "said hi"
    assert (run.workspace / "hello.py").exists()
