"""The Run screen at 80×24: steps and the step side by side, `w` swaps the step for the files."""

from __future__ import annotations

from environments.record.runs import RunDir
from tests.tui.conftest import make_demo_runs
from tui.app import LabcoatApp
from tui.screens.run import RunScreen


def _app(tmp_path) -> LabcoatApp:
    _, made = make_demo_runs(tmp_path)
    run = RunDir.open(made[0].path)
    return LabcoatApp(runs_dir=run.path.parent, sandbox="local", first_screen=lambda: RunScreen(run))


async def test_at_80_columns_w_swaps_the_step_for_the_files(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        side, detail = screen.query_one("#side"), screen.query_one("#detail")
        assert screen.has_class("-narrow") and not side.display and detail.display
        assert detail.region.width >= 40  # the step has the room the files would have taken
        await pilot.press("w")
        await pilot.pause()
        assert side.display and not detail.display and side.region.width >= 40
        await pilot.press("w")
        await pilot.pause()
        assert detail.display and not side.display


async def test_at_160_columns_all_three_panes_show_and_w_is_not_a_key(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#side").display and screen.query_one("#detail").display
        assert screen.check_action("toggle_side", ()) is False
