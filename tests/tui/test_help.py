"""F1 and ``?`` show labcoat's own help for the screen; the palette lists labcoat's commands."""

from __future__ import annotations

from textual.command import CommandList, CommandPalette

from tests.tui.conftest import SIZE, make_demo_runs, opened_run, wait_for
from tui.app import LabcoatApp
from tui.screens.help import HelpScreen
from tui.screens.run import RunScreen


def _help_text(app) -> str:
    return app.screen.markdown


async def test_f1_on_a_run_by_hand_explains_the_screen_and_lists_only_its_keys(human_app):
    app = human_app
    async with app.run_test(size=SIZE) as pilot:
        await opened_run(app, pilot)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = _help_text(app)
        assert text.startswith("# Run") and "Prev step" in text and "By hand" in text
        assert "Pause/resume" not in text and "Accept" not in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))


async def test_question_mark_on_the_runs_screen(tmp_path):
    make_demo_runs(tmp_path)
    from tui.screens.runs import RunsScreen

    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: RunsScreen(tmp_path / "runs"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert _help_text(app).startswith("# Runs") and "Score all steps" in _help_text(app)


async def test_the_command_palette_lists_labcoat_commands_before_typing(app):
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))

        def prompts() -> list[str]:
            options = app.screen.query_one(CommandList).options
            return [str(getattr(o.prompt, "plain", o.prompt)) for o in options]

        await wait_for(pilot, lambda: any("Tasks: show the task suite" in p for p in prompts()))
        assert any("Runs: browse past runs" in p for p in prompts())
