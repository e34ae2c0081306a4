"""Confirm mode: a file write is shown as its diff, the keys answer, Stop ends it cleanly."""

from __future__ import annotations

import json

from environments.record.runs import RunDir
from tests.tui.conftest import SIZE, click, wait_for
from tests.tui.test_agent_mode import REPLIES, react, scripted_session
from tui.app import LabcoatApp
from tui.screens.ask import AskScreen
from tui.screens.run import RunScreen
from tui.widgets.code_view import CodeView


def _app(tmp_path, session) -> LabcoatApp:
    return LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                      first_screen=lambda: RunScreen(session.run, agent=session))


async def test_a_write_is_shown_as_a_diff_against_the_file_and_answered_by_keys(tmp_path):
    new = "import numpy\n" + "".join(f"print({i})\n" for i in range(60))
    replies = "\n---8<---\n".join([
        react("rewrite", "Write File", json.dumps({"file_name": "train.py", "content": new})),
        react("done", "Final Answer", '{"final_answer": "ok"}'),
    ])
    session = scripted_session(tmp_path, replies, confirm=True)
    old = (session.run.workspace / "train.py").read_text()
    async with _app(tmp_path, session).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        await pilot.pause()
        body = screen.query_one("#confirm-body", CodeView)
        assert body.text.startswith("--- a/train.py\n+++ b/train.py")
        assert "+import numpy" in body.text and "\\n" not in body.text
        assert any(f"-{line}" in body.text for line in old.splitlines() if line.strip())
        # a long proposal scrolls inside its panel; the answers stay on screen above it
        assert body.max_scroll_y > 0
        assert screen.query_one("#confirm-accept").region.bottom <= body.region.y
        await pilot.press("y")
        await wait_for(pilot, lambda: session.pending is not None
                       and session.pending.action == "Final Answer")
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "finished")
    assert (session.run.workspace / "train.py").read_text() == new


async def test_stop_while_a_proposal_waits_records_interrupted_and_clears_the_panel(tmp_path):
    session = scripted_session(tmp_path, REPLIES, confirm=True)
    async with _app(tmp_path, session).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        await click(pilot, "#agent-stop")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, AskScreen))  # asks first
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "interrupted")
        await pilot.pause()
        assert screen.query_one("#confirm-panel").has_class("hidden")
        assert screen.query_one("#agent-pause").disabled
        assert not screen.query_one("#agent-controls Button").display  # nothing left to stop
    meta = RunDir.open(session.run.path).meta
    assert meta.status == "interrupted" and meta.status_reason == "stopped by the user"
    assert RunDir.open(session.run.path).steps() == []


async def test_the_pause_label_follows_a_single_step_and_paused_time_is_measured(tmp_path):
    session = scripted_session(tmp_path, REPLIES, confirm=True)
    async with _app(tmp_path, session).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen

        def label() -> str:
            return str(screen.query_one("#agent-pause").label)

        await wait_for(pilot, lambda: session.pending is not None)  # the worker waits on us
        assert label() == "Pause (space)"
        await pilot.press("n")  # single step: this step runs, then the session pauses itself
        await pilot.press("y")
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        await pilot.pause()
        assert session.paused and label() == "Resume (space)"
        await pilot.press("space")
        await wait_for(pilot, lambda: session.pending is not None
                       and session.pending.action == "Write File")
        assert label() == "Pause (space)" and session.paused_seconds > 0
        await pilot.press("S")  # Stop's key: it asks too
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, AskScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "interrupted")


async def test_edit_key_opens_the_proposal_in_a_form_and_runs_the_edited_action(tmp_path):
    replies = "\n---8<---\n".join([
        react("look", "List Files", '{"dir_path": "nowhere"}'),
        react("done", "Final Answer", '{"final_answer": "ok"}'),
    ])
    session = scripted_session(tmp_path, replies, confirm=True)
    async with _app(tmp_path, session).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        await pilot.press("e")
        await wait_for(pilot, lambda: screen.query("#confirm-form #field-dir_path"))
        field = screen.query_one("#confirm-form #field-dir_path")
        assert field.value == "nowhere"
        field.value = "."
        field.focus()
        await pilot.press("enter")  # Enter submits the form: the edited action runs
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        await click(pilot, "#confirm-accept")
        await wait_for(pilot, lambda: session.run.meta.status == "finished")
    step = RunDir.open(session.run.path).steps()[0]
    assert step.args == {"dir_path": "."} and step.meta["edited_by_human"]
    assert step.meta["proposed_args"] == {"dir_path": "nowhere"}
