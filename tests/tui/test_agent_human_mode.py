"""Human mode in the TUI at 80×24 (mini-swe-agent's third confirm mode): `m` (or the palette)
takes an agent run over, the run screen gives the person the action form of a run by hand and
the model is not asked; `m` hands back; the trace says who took each step, and a run stopped
in human mode resumes in it."""

from __future__ import annotations

from agent.approval import TOOK_OVER, ReviewSettings
from environments.record.runs import RunDir
from tests.tui.conftest import wait_for
from tests.tui.test_agent_mode import react, scripted_session
from tests.tui.test_human_actor import _choose
from tests.tui.test_no_surprises import SMALL, _agent_app, _inside
from tui.app import LabcoatApp
from tui.screens.ask import AskScreen
from tui.screens.run import RunScreen


def _calls(session) -> int:
    calls = session.run.path / "llm" / "calls.jsonl"
    return len(calls.read_text().splitlines()) if calls.exists() else 0


async def test_human_mode_takes_over_by_key_and_hands_back_and_survives_resume(tmp_path):
    replies = "\n---8<---\n".join([
        react("look", "List Files", '{"dir_path": "."}'),
        react("done", "Final Answer", '{"final_answer": "ok"}'),
    ])
    session = scripted_session(tmp_path, replies, confirm=True)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        commands = {name for name, _, _ in screen.run_commands()}
        assert "Run: human mode" in commands
        await pilot.press("m", "m")  # confirm -> yolo -> human: the waiting proposal is not run
        assert session.settings.mode == "human"
        palette = screen.query_one("#palette")
        await wait_for(pilot, lambda: palette.option_count > 0 and app.focused is palette)
        assert _inside(palette) and screen.query_one("#confirm-panel").has_class("hidden")
        assert "human mode" in str(screen.query_one("#agent-state").render())
        assert not any("(AI)" in str(o.prompt) and not o.disabled for o in palette.options)
        await _choose(pilot, screen, "List Files")
        assert _inside(screen.query_one("#field-dir_path"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        assert _calls(session) == 1  # the model was asked once, before the person took over
        assert ReviewSettings.load(session.run.path).mode == "human"
        await pilot.press("S")  # stopped while it is the person's turn
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "interrupted")
    step = RunDir.open(session.run.path).steps()[0]
    assert (step.actor, step.action) == ("human", "List Files")
    assert step.meta["rejected"][0]["reason"] == TOOK_OVER

    # `u` on the Runs screen resumes it in human mode; `m` hands it back (confirm)
    from tui.screens.runs import RunsScreen

    runs = tmp_path / "runs"
    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: RunsScreen(runs))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.is_mounted)
        screen, resumed = app.screen, app.screen.agent
        assert resumed.settings.mode == "human"
        palette = screen.query_one("#palette")
        await wait_for(pilot, lambda: palette.option_count > 0 and _inside(palette))
        await pilot.press("m")  # human -> confirm: the agent is asked again
        await wait_for(pilot, lambda: resumed.pending is not None)
        assert screen.query_one("#human-panel").has_class("hidden")
        while screen.is_live:  # each proposal now asks again, until the Final Answer
            await wait_for(pilot, lambda: resumed.pending is not None or not screen.is_live)
            if resumed.pending is not None:
                answered = resumed.pending
                await pilot.press("y")
                await wait_for(pilot, lambda: resumed.pending is not answered)
    meta = RunDir.open(session.run.path).meta
    assert meta.status == "finished", meta.status_reason
    actors = [s.actor for s in RunDir.open(session.run.path).steps()]
    assert actors[0] == "human" and set(actors[1:]) == {"agent"}
