"""The Tree tab of a tree run: nodes with their parents, metrics and statuses drawn from the
trace, any node's code and its diff against its parent, the tab following the selected step,
no tab for other runs, and a live tree run started from the setup form growing its tab."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Select, TabbedContent

from agent.models import make_model
from agent.runner import Budgets, create_run, drive
from agent.tree.agent import TreeAgent
from agent.tree.policy import PolicySettings
from agent.tree.settings import TreeSettings
from environments.record.runs import RunDir
from tests.agent.helpers import write_replies
from tests.conftest import write_task
from tests.tui.conftest import SIZE, click, make_demo_runs, wait_for
from tui.app import LabcoatApp
from tui.screens.agent_setup import AgentSetupScreen
from tui.screens.run import RunScreen
from tui.widgets.code_view import CodeView
from tui.widgets.tree_view import TreeView

BUGGY = "raise RuntimeError('[bold]no data[/bold]')\n"  # markup-looking text stays text


def writes(value: int) -> str:
    return f"open('result.txt', 'w').write('{value}')\nprint('validation total {value}')\n"


def reply(plan: str, code: str) -> str:
    return f"{plan}\n\n```python\n{code.rstrip()}\n```"


REPLIES = [reply("start", BUGGY), reply("fix it", writes(50)), reply("more", writes(70))]


@pytest.fixture
def tree_run(tmp_path) -> RunDir:
    """A real tree search (scripted model, local sandbox): node 1 fails, node 2 debugs it (50),
    node 3 improves node 2 (70, the best)."""
    task = write_task(tmp_path / "tiny")
    model = write_replies(tmp_path / "r.txt", REPLIES)
    actor = TreeAgent(make_model(model), TreeSettings(policy=PolicySettings(num_drafts=1, debug_prob=1.0)))
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model=model, agent="tree",
                           budgets=Budgets(max_steps=9))
    assert drive(run, spec, actor).status == "finished"
    return RunDir.open(run.path)


def _app(run: RunDir) -> LabcoatApp:
    return LabcoatApp(runs_dir=run.path.parent, sandbox="local", first_screen=lambda: RunScreen(run))


async def _tree_tab(pilot) -> TreeView:
    screen = pilot.app.screen
    await wait_for(pilot, lambda: bool(screen.query("#tab-tree")))
    screen.query_one("#side", TabbedContent).active = "tab-tree"
    await pilot.pause()
    return screen.query_one("#tree-view", TreeView)


def _code(view: TreeView) -> str:
    return view.query_one("#tree-code", CodeView).text


async def test_the_tree_shows_every_node_with_its_parent_metric_and_status(tree_run):
    async with _app(tree_run).run_test(size=SIZE) as pilot:
        view = await _tree_tab(pilot)
        assert view.labels() == [
            "#1 draft · failed: RuntimeError: [bold]no data[/bold]",
            "  #2 debug of #1 · total 50 (printed)",
            "    #3 improve of #2 · total 70 (printed) ★ best",
        ]
        # the last step (the Final Answer) is node 3's: the tree opens on it
        assert view.selected == 3 and _code(view) == writes(70).rstrip("\n")


async def test_any_nodes_code_and_its_diff_against_its_parent(tree_run):
    async with _app(tree_run).run_test(size=SIZE) as pilot:
        view = await _tree_tab(pilot)
        view.query_one("#tree-nodes").focus()
        await pilot.press("up", "up")  # from node 3 (the last step's) to node 1, the failed draft
        await pilot.pause()
        assert view.selected == 1 and "RuntimeError" in _code(view)
        await pilot.press("down")  # node 2
        await pilot.pause()
        assert view.selected == 2 and _code(view) == writes(50).rstrip("\n")
        await pilot.press("d")
        await pilot.pause()
        diff = _code(view)
        assert "-raise RuntimeError('[bold]no data[/bold]')" in diff
        assert "+open('result.txt', 'w').write('50')" in diff
        assert "against node 1" in str(view.query_one("#tree-caption").render())
        await pilot.press("down")  # node 3 against node 2, still as a diff
        await pilot.pause()
        assert "-open('result.txt', 'w').write('50')" in _code(view)
        assert "+open('result.txt', 'w').write('70')" in _code(view)
        await pilot.press("up", "up")  # node 1, a draft: against the starting script
        await pilot.pause()
        assert "against the starting script" in str(view.query_one("#tree-caption").render())
        assert "+raise RuntimeError" in _code(view)
        await pilot.press("d")  # back to the code
        await pilot.pause()
        assert _code(view) == BUGGY.rstrip("\n")


async def test_the_tree_follows_the_selected_step(tree_run):
    steps = tree_run.steps()
    second = next(s.index for s in steps if s.meta["tree"]["node"] == 2)
    async with _app(tree_run).run_test(size=SIZE) as pilot:
        view = await _tree_tab(pilot)
        screen = pilot.app.screen
        screen.select(second)
        await pilot.pause()
        assert view.selected == 2 and _code(view) == writes(50).rstrip("\n")
        screen.select(1)
        await pilot.pause()
        assert view.selected == 1


async def test_a_run_without_a_tree_has_no_tree_tab(tmp_path):
    _, made = make_demo_runs(tmp_path)
    async with _app(RunDir.open(made[0].path)).run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = pilot.app.screen
        assert not screen.query("#tab-tree") and not screen.tree_tab


async def test_a_live_tree_run_from_the_setup_form_grows_its_tree(tmp_path):
    task = write_task(tmp_path / "tiny")
    model = write_replies(tmp_path / "r.txt", REPLIES)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: AgentSetupScreen(str(task)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        form = app.screen
        form.query_one("#setup-kind", Select).value = "tree"
        form.query_one("#setup-model", Input).value = model
        form.query_one("#setup-num-drafts", Input).value = "1"
        form.query_one("#setup-debug-prob", Input).value = "1"
        form.query_one("#setup-max-steps", Input).value = "9"
        await click(pilot, "#setup-start")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        screen = app.screen
        run = screen.run
        await wait_for(pilot, lambda: run.meta.status not in ("created", "running"))
        await wait_for(pilot, lambda: len(screen.steps) == len(run.steps()))
        assert run.meta.status == "finished" and run.meta.agent == "tree"
        view = await _tree_tab(pilot)
        assert [label.strip().split(" · ")[0] for label in view.labels()] == [
            "#1 draft", "#2 debug of #1", "#3 improve of #2"]
        assert "★ best" in view.labels()[-1]
