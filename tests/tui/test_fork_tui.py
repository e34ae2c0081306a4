"""Forking from the TUI: the Runs screen forks the selected run at a chosen step into a
person's run, and lists forks under their parent."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from environments.record.runs import RunDir
from tests.agent.test_fork import ACTIONS, _jsonl
from tests.conftest import write_task
from tests.tui.conftest import SIZE, settle, wait_for
from tests.tui.test_human_mode import submit
from tui.app import LabcoatApp
from tui.cli import app as cli_app
from tui.screens.ask import AskScreen
from tui.screens.run import RunScreen
from tui.screens.runs import ForkDialog, RunsScreen


def _original(tmp_path) -> RunDir:
    task = write_task(tmp_path / "tiny")
    actions = _jsonl(tmp_path / "actions.jsonl", ACTIONS)
    res = CliRunner().invoke(cli_app, ["run", str(task), "--actions", str(actions), "--sandbox", "local",
                                       "--runs-dir", str(tmp_path / "runs"), "--no-score", "--json"])
    assert res.exit_code == 0, res.output
    return RunDir.open(json.loads(res.stdout)["run_dir"])


async def test_a_person_forks_a_run_at_a_step_and_continues_by_hand(tmp_path):
    original = _original(tmp_path)
    runs_dir = tmp_path / "runs"
    app = LabcoatApp(runs_dir=runs_dir, sandbox="local", first_screen=lambda: RunsScreen(runs_dir))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkDialog))
        dialog = app.screen
        step = dialog.query_one("#fork-step")
        assert step.value == "6"  # the step before the Final Answer
        step.value = "9"  # out of range: said, and the dialog stays
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is dialog and "0 to 7" in str(dialog.query_one("#fork-error").render())
        step.value = "3"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.is_mounted)
        screen = app.screen
        assert screen.human is not None and screen.run.meta.fork.parent == original.meta.run_id
        assert [s.action for s in screen.steps] == [a["action"] for a in ACTIONS[:3]]
        await submit(app, pilot, "Write File", file_name="by_hand.txt", content="mine\n")
        await pilot.press("escape", "escape")  # the form closes, then leaving asks (it ends the run)
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await settle(app, pilot)
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        table = app.screen.query_one("#runs-table")
        await wait_for(pilot, lambda: table.row_count == 2)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(2)]
    fork = RunDir.open(screen.run.path)
    assert rows[0][1] == original.meta.run_id  # the run's id second, after its improvement
    assert rows[1][1] == f"└ {fork.meta.run_id}" and rows[1][2] == "4 (from 3)"
    steps = fork.steps()
    assert [(s.action, s.inherited, s.actor) for s in steps] == [
        ("List Files", True, "replay"), ("Write File", True, "replay"), ("Execute Script", True, "replay"),
        ("Write File", False, "human")]
    assert (fork.workspace / "result.txt").read_text() == "10"  # step 3's workspace, then the person's
    assert (fork.workspace / "by_hand.txt").read_text() == "mine\n"
    assert not (fork.workspace / "notes.md").exists()
    assert fork.meta.actor == "human" and fork.meta.status == "interrupted"
    assert [r.run_id for r in original.forks()] == [fork.meta.run_id]


async def test_a_fork_that_cannot_be_made_is_said_and_nothing_opens(tmp_path):
    original = _original(tmp_path)
    (original.path / "snapshots" / "manifests" / "00002.json").unlink()
    runs_dir = tmp_path / "runs"
    app = LabcoatApp(runs_dir=runs_dir, sandbox="local", first_screen=lambda: RunsScreen(runs_dir))
    notes = []
    async with app.run_test(size=SIZE) as pilot:
        app.notify = lambda message, **kw: notes.append(message)  # what the person is told
        await pilot.pause()
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkDialog))
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(notes))
        await settle(app, pilot)
        assert isinstance(app.screen, RunsScreen)
    assert "has no workspace snapshot for step 2" in notes[0]
    assert sorted(p.name for p in runs_dir.iterdir()) == [original.meta.run_id]


async def test_the_run_view_forks_at_the_step_on_screen(tmp_path):
    original = _original(tmp_path)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: RunScreen(RunDir.open(original.path)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        first = app.screen
        await wait_for(pilot, lambda: len(first.steps) == len(ACTIONS))
        first.select(2)
        await pilot.press("K")
        await wait_for(pilot, lambda: app.screen is not first and isinstance(app.screen, RunScreen)
                       and app.screen.is_mounted)
        fork = app.screen
        assert fork.human is not None and fork.run.meta.fork.step == 2
        assert [s.action for s in fork.steps] == [a["action"] for a in ACTIONS[:2]]
        await pilot.press("escape")  # a live run by hand: leaving asks
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await settle(app, pilot)
