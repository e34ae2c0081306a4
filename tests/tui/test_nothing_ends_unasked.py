"""Nothing ends or waits without asking (#42.3): `q` on a live run asks as Escape and `S` do,
and says at once that the run is stopping; yolo mode, once switched on, waits for nothing (the
Final Answer included); a person's run that has stopped offers no more actions."""

from __future__ import annotations

from textual.widgets import OptionList, Static

from tests.tui.conftest import opened_run, wait_for
from tests.tui.test_agent_mode import react, scripted_session
from tui.app import LabcoatApp
from tui.screens.ask import AskScreen
from tui.screens.run import RunScreen

SMALL = (80, 24)
LOOK_TWICE_AND_END = "\n---8<---\n".join([
    react("look", "List Files", '{"dir_path": "."}'),
    react("look again", "List Files", '{"dir_path": "."}'),
    react("done", "Final Answer", '{"final_answer": "ok"}'),
])


def _agent_app(tmp_path, session) -> LabcoatApp:
    return LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                      first_screen=lambda: RunScreen(session.run, agent=session))


async def test_q_on_a_live_run_asks_and_says_it_is_stopping(tmp_path):
    from tui.screens.stopping import StoppingScreen

    session = scripted_session(tmp_path, confirm=True)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        assert "quit" in app.screen.question.lower()
        await pilot.press("n")  # no: the app and the run go on
        await wait_for(pilot, lambda: app.screen is screen)
        assert app.is_running and session.run.meta.status == "running"
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        # at once, before the run has ended: a screen that says what is happening
        await wait_for(pilot, lambda: isinstance(app.screen, StoppingScreen), timeout=2)
        text = str(app.screen.query_one("#stopping-text", Static).render())
        assert "stopping" in text and session.run.meta.run_id in text
        await wait_for(pilot, lambda: not app.is_running)
    assert session.run.meta.status == "interrupted"


async def test_q_with_no_live_run_quits_at_once(tmp_path):
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=5)


async def test_after_switching_to_yolo_nothing_waits_not_even_the_final_answer(tmp_path):
    session = scripted_session(tmp_path, LOOK_TWICE_AND_END, confirm=True)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        await wait_for(pilot, lambda: session.pending is not None)
        await pilot.press("m")  # confirm -> yolo; the proposal on screen still waits
        assert session.settings.mode == "yolo"
        await pilot.press("y")  # ... and the person who walked away finds the run finished
        await wait_for(pilot, lambda: session.run.meta.status != "running" or session.pending is not None)
        assert session.pending is None, f"waits for {session.pending.action} in yolo mode"
        await wait_for(pilot, lambda: session.run.meta.status == "finished")


async def test_a_stopped_run_by_hand_offers_no_actions(human_app):
    app = human_app
    async with app.run_test(size=SMALL) as pilot:
        screen = await opened_run(app, pilot)
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.run.meta.status == "interrupted")
        await pilot.pause()
        palette = screen.query_one("#palette", OptionList)
        assert palette.disabled or not palette.display
        assert "ended" in str(screen.query_one("#form-hint", Static).render())
        await pilot.press("enter")  # nothing to open: no form, no failing action
        await pilot.pause()
        assert not screen.query("#action-form")
