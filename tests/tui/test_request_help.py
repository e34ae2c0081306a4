"""Request Help in the TUI: the agent's question waits for the person, who answers (Enter) or
gives no answer (Escape); the question is the model's text, shown sanitised."""

from __future__ import annotations

from agent.config import ActorConfig
from agent.runner import Budgets, create_run
from environments.acting.help_request import ANSWERED, DECLINED, REQUEST_HELP
from environments.record.runs import RunDir
from tests.conftest import write_task
from tests.tui.conftest import SIZE, wait_for
from tests.tui.test_agent_mode import react
from tui.app import LabcoatApp
from tui.screens.request_help import HelpAnswerScreen
from tui.screens.run import RunScreen
from tui.session import AgentSession, build_actor


def watched(tmp_path, *replies: str) -> tuple[AgentSession, LabcoatApp]:
    """A scripted agent's run with Request Help enabled, on the Run screen."""
    path = tmp_path / "replies.txt"
    path.write_text("\n---8<---\n".join(replies))
    config = ActorConfig(kind="research", model=f"scripted/{path}", enable_actions=REQUEST_HELP)
    actor = build_actor(config)
    run, spec = create_run(write_task(tmp_path / "tiny"), actor, tmp_path / "runs", config=config,
                           sandbox="local", budgets=Budgets(max_steps=5))
    session = AgentSession(run, spec, actor)
    return session, LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                               first_screen=lambda: RunScreen(session.run, agent=session))


async def test_the_person_answers_one_request_and_declines_the_next(tmp_path):
    session, app = watched(
        tmp_path,
        react("ask", REQUEST_HELP, '{"request": "may I use numpy? \\u001b[2J\\u001b]0;pwned\\u0007"}'),
        react("ask again", REQUEST_HELP, '{"request": "and scipy?"}'),
        react("done", "Final Answer", '{"final_answer": "asked"}'))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HelpAnswerScreen)
                       and app.focused is app.screen.query_one("#help-answer"))
        shown = str(app.screen.query_one("#help-request-question").render())
        assert "may I use numpy?" in shown and "\x1b" not in shown and "\x07" not in shown
        await pilot.press(*"yes, numpy", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpAnswerScreen)
                       and "scipy" in str(app.screen.query_one("#help-request-question").render()))
        await pilot.press("escape")
        await wait_for(pilot, lambda: session.run.meta.status == "finished")
    steps = RunDir.open(session.run.path).steps()
    assert [(s.action, s.observation) for s in steps[:2]] == [
        (REQUEST_HELP, ANSWERED + "yes, numpy"), (REQUEST_HELP, DECLINED)]
    assert steps[0].data == {"answered_by": "person"} and steps[-1].action == "Final Answer"


async def test_stopping_the_run_answers_a_waiting_request(tmp_path):
    session, app = watched(tmp_path, react("ask", REQUEST_HELP, '{"request": "anyone?"}'))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: session.help_desk.pending == "anyone?")
        session.stop()  # what S (confirmed) does
        await wait_for(pilot, lambda: session.run.meta.status == "interrupted")
