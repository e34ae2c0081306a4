"""SVG snapshots of the main screens on fixed data (pytest-textual-snapshot).

Update them after an intended change with ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

import pytest

from environments.record.runs import RunDir
from tests.tui.conftest import SIZE, make_demo_runs
from tui.app import LabcoatApp
from tui.screens.run import RunScreen
from tui.screens.runs import RunsScreen
from tui.screens.scores import ScoresScreen


@pytest.fixture
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    return make_demo_runs(root)


def _app(runs_dir, screen_factory):
    return LabcoatApp(runs_dir=runs_dir, sandbox="local", first_screen=screen_factory)


def test_runs_screen(snap_compare, demo):
    runs_dir, _ = demo
    assert snap_compare(_app(runs_dir, lambda: RunsScreen(runs_dir)), terminal_size=SIZE)


def test_run_screen_replay(snap_compare, demo):
    runs_dir, made = demo
    run = RunDir.open(made[0].path)

    async def go_to_step_2(pilot):
        await pilot.press("g", "l")
        await pilot.pause()

    assert snap_compare(_app(runs_dir, lambda: RunScreen(run)), terminal_size=SIZE,
                        run_before=go_to_step_2)


def test_scores_screen(snap_compare, demo):
    runs_dir, _ = demo
    assert snap_compare(_app(runs_dir, lambda: ScoresScreen(runs_dir)), terminal_size=SIZE)


def test_tasks_screen(snap_compare, tmp_path):
    """On fixed task folders (the shipped suite grows; this screen's layout should not move)."""
    from tests.conftest import write_task
    from tui.screens.tasks import TasksScreen

    folders = [write_task(tmp_path / name) for name in ("alpha", "beta")]
    (folders[1] / "task.toml").write_text('kind = "method"\nmetric = "error"\ndirection = "lower"\n'
                                          'baseline = 0.5\nsummary = "A lower-is-better task."\n')
    assert snap_compare(LabcoatApp(runs_dir=tmp_path, sandbox="local",
                                   first_screen=lambda: TasksScreen(folders)), terminal_size=SIZE)
