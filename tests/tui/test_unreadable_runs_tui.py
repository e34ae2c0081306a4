"""The TUI's Scores screen over a runs folder with a broken run.json: it opens, shows the
runs it can read, and names the one it skipped (the app goes on)."""

from __future__ import annotations

from tests.environments.test_unreadable_runs import bad_runs
from tests.tui.conftest import settle
from tui.app import LabcoatApp


async def test_scores_screen_skips_and_names_unreadable_runs(tmp_path):
    from tui.screens.scores import ScoresScreen

    bad_runs(tmp_path / "runs")
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("s")
        await settle(app, pilot)
        assert app.is_running and isinstance(app.screen, ScoresScreen)
        assert app.screen.rows, "the readable runs are shown"
        said = " ".join(str(n.message) for n in app._notifications)
        assert "skipped 2 run folders" in said and "corrupt" in said and "empty" in said
