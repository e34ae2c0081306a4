"""``labcoat tui --task/--model/--confirm/--run`` opens straight into a run."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.conftest import write_task
from tests.tui.conftest import SIZE, make_demo_runs, opened_run, wait_for
from tests.tui.test_agent_mode import REPLIES
from tui.app import DeepLink, LabcoatApp
from tui.cli import app as cli
from tui.screens.run import RunScreen


async def test_task_model_confirm_opens_an_agent_run_waiting_for_approval(tmp_path):
    task = write_task(tmp_path / "tiny")
    replies = tmp_path / "replies.txt"
    replies.write_text(REPLIES)
    link = DeepLink(task=str(task), model=f"scripted/{replies}", confirm=True)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local", link=link)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        assert screen.agent is not None and screen.agent.confirm
        await wait_for(pilot, lambda: screen.agent.pending is not None)
        assert screen.agent.pending.action == "List Files"
        screen.agent.stop()


async def test_task_alone_opens_a_run_by_hand(human_app):
    async with human_app.run_test(size=SIZE) as pilot:
        screen = await opened_run(human_app, pilot)
        assert screen.human is not None and screen.agent is None


async def test_run_opens_a_past_run(tmp_path):
    _, made = make_demo_runs(tmp_path)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local", link=DeepLink(run=made[0].path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        assert app.screen.run.meta.run_id == made[0].meta.run_id and len(app.screen.steps) == 4


@pytest.mark.parametrize("args, message", [
    (["--model", "baseline/hparam"], "--task"),
    (["--task", "x", "--confirm"], "--model"),
    (["--run", "nowhere"], "run.json"),
])
def test_inconsistent_links_are_user_errors(args, message, monkeypatch):
    monkeypatch.setattr(LabcoatApp, "run", lambda self: pytest.fail("the app must not open"))
    result = CliRunner().invoke(cli, ["tui", "--sandbox", "local", *args])
    assert result.exit_code == 2 and message in result.output


def test_the_link_reaches_the_app(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(LabcoatApp, "run", lambda self: seen.update(link=self.link, sandbox=self.sandbox))
    result = CliRunner().invoke(cli, ["tui", "--sandbox", "local", "--task", "digits", "--model",
                                      "baseline/hparam", "--confirm"])
    assert result.exit_code == 0, result.output
    assert seen == {"link": DeepLink(task="digits", model="baseline/hparam", confirm=True),
                    "sandbox": "local"}
