"""Agent mode in the TUI: a scripted model watched live, paused, single-stepped, resumed;
confirm mode rejecting an action; and starting from the agent setup form."""

from __future__ import annotations

import pytest

from agent.runner import Budgets, create_run
from environments.record.runs import RunDir
from tests.conftest import write_task
from tests.tui.conftest import SIZE, click, wait_for
from tui.app import LabcoatApp
from tui.screens.agent_setup import AgentSetupScreen
from tui.screens.run import RunScreen
from tui.session import AgentSession, build_actor


def react(thought: str, action: str, args: str) -> str:
    return (f"Reflection: ok.\nResearch Plan and Status: 1. {thought}\nFact Check: none.\n"
            f"Thought: {thought}\nAction: {action}\nAction Input: {args}")


REPLIES = "\n---8<---\n".join([
    react("look around", "List Files", '{"dir_path": "."}'),
    react("write the result", "Write File",
          '{"file_name": "train.py", "content": "open(\'result.txt\',\'w\').write(\'50\')"}'),
    react("run it", "Execute Script", '{"script_name": "train.py"}'),
    react("done", "Final Answer", '{"final_answer": "result is 50"}'),
])


def scripted_session(tmp_path, replies: str = REPLIES, confirm: bool = False, train: str | None = None):
    """A scripted agent's session on a tiny task (its train.py replaced by ``train``)."""
    task = write_task(tmp_path / "tiny", files=None if train is None else {"env/train.py": train})
    replies_file = tmp_path / "replies.txt"
    replies_file.write_text(replies)
    model = f"scripted/{replies_file}"
    actor = build_actor(model)
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model=model,
                           budgets=Budgets(max_steps=10))
    return AgentSession(run, spec, actor, confirm=confirm)


async def test_agent_watched_live_paused_single_stepped_and_resumed(tmp_path):
    session = scripted_session(tmp_path)
    session.pause()  # the worker starts paused, so each transition below is deterministic
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: RunScreen(session.run, agent=session))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await pilot.pause(0.5)
        assert screen.steps == [] and session.paused
        await pilot.press("n")  # single step
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        await pilot.pause(0.5)
        assert len(screen.steps) == 1 and session.paused
        assert "paused" in str(screen.query_one("#status").render())
        await pilot.press("space")  # resume
        await wait_for(pilot, lambda: session.run.meta.status == "finished")
        await wait_for(pilot, lambda: len(screen.steps) == 4)
        assert [s.action for s in screen.steps][-1] == "Final Answer"
    steps = RunDir.open(session.run.path).steps()
    assert [s.action for s in steps] == ["List Files", "Write File", "Execute Script", "Final Answer"]
    assert steps[0].meta["fields"]["Thought"] == "look around"


async def test_confirm_mode_rejects_an_action_which_is_never_run(tmp_path):
    replies = "\n---8<---\n".join([
        react("delete everything", "Write File", '{"file_name": "train.py", "content": "BROKEN"}'),
        react("fine, just look", "List Files", '{"dir_path": "."}'),
        react("done", "Final Answer", '{"final_answer": "looked"}'),
    ])
    session = scripted_session(tmp_path, replies, confirm=True)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: RunScreen(session.run, agent=session))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        proposal = screen.query_one("#confirm-proposal")

        async def shown(action: str) -> None:
            """The panel shows ``action`` and the session waits on that same proposal."""
            await wait_for(pilot, lambda: session.pending is not None
                           and session.pending.action == action
                           and action in str(proposal.render()))

        await shown("Write File")
        await click(pilot, "#confirm-reject")  # asks why: the reason goes to the agent
        await wait_for(pilot, lambda: bool(screen.query("#reject-reason")))
        await pilot.press(*"keep train.py", "enter")
        await shown("List Files")
        await click(pilot, "#confirm-accept")
        await shown("Final Answer")
        await click(pilot, "#confirm-accept")
        await wait_for(pilot, lambda: session.run.meta.status == "finished")
    steps = RunDir.open(session.run.path).steps()
    assert [s.action for s in steps] == ["List Files", "Final Answer"]
    assert steps[0].meta["rejected"][0]["action"] == "Write File"
    assert steps[0].meta["rejected"][0]["reason"] == "keep train.py"
    assert "BROKEN" not in (session.run.workspace / "train.py").read_text()


def setup_app(tmp_path):
    """The app opened on the setup form of a tiny task, and a replies file for the model."""
    task = write_task(tmp_path / "tiny")
    replies_file = tmp_path / "replies.txt"
    replies_file.write_text(REPLIES)
    return LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                      first_screen=lambda: AgentSetupScreen(str(task))), replies_file


@pytest.mark.parametrize("submit", ["click Start", "Enter in a field"])
async def test_agent_started_from_the_setup_form(tmp_path, submit):
    app, replies_file = setup_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query_one("#setup-model").value = f"scripted/{replies_file}"
        app.screen.query_one("#setup-max-steps").value = "3"
        if submit == "click Start":
            await click(pilot, "#setup-start")
        else:
            app.screen.query_one("#setup-max-steps").focus()
            await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen.run
        await wait_for(pilot, lambda: run.meta.status not in ("created", "running"))
    assert run.meta.status == "max_steps" and len(run.steps()) == 3


async def test_setup_form_has_a_widget_for_every_option_and_stores_them(tmp_path):
    """The form is generated from the same option descriptions as the CLI's flags: one widget
    per field of ActorConfig and Budgets, and what is set there is what run.json stores."""
    from textual.widgets import Input, Select

    from agent.config import OPTIONS, ActorConfig
    from tui.screens.agent_setup import widget_id

    app, replies_file = setup_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        for o in OPTIONS:
            widget = screen.query_one(f"#{widget_id(o)}")
            assert isinstance(widget, Select if o.choices else Input), o.name
            assert widget.tooltip == o.hint
        screen.query_one("#setup-model", Input).value = f"scripted/{replies_file}"
        screen.query_one("#setup-max-steps", Input).value = "2"
        screen.query_one("#setup-seed", Input).value = "5"
        screen.query_one("#setup-keep-last", Input).value = "2"
        screen.query_one("#setup-max-cost", Input).value = "-1"
        await click(pilot, "#setup-start")
        assert "--max-cost" in str(screen.query_one("#setup-error").render())  # bad input: stays
        screen.query_one("#setup-max-cost", Input).value = ""
        await click(pilot, "#setup-start")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        run = app.screen.run
        await wait_for(pilot, lambda: run.meta.status not in ("created", "running"))
    config = ActorConfig.from_meta(RunDir.open(run.path).meta)
    assert (config.kind, config.seed, config.context.keep_last) == ("research", 5, 2)
    assert run.meta.status == "max_steps" and run.meta.budgets.max_steps == 2
