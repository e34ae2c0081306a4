"""A workbench that never surprises the person at it, at 80×24: Escape and Stop ask before
ending a run, no key starts a run at once, every dialog and the confirm panel fit, the footer
keeps Scores and Quit, and the Runs screen shows the headline numbers."""

from __future__ import annotations

import json

from agent.approval import SETTINGS_FILE, ReviewSettings
from environments.record.runs import RunDir
from tests.conftest import write_task
from tests.tui.conftest import make_demo_runs, opened_run, wait_for
from tests.tui.test_agent_mode import REPLIES, react, scripted_session
from tui.app import LabcoatApp
from tui.screens.ask import AskScreen
from tui.screens.run import RunScreen
from tui.widgets.code_view import CodeView

SMALL = (80, 24)



def _agent_app(tmp_path, session) -> LabcoatApp:
    return LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                      first_screen=lambda: RunScreen(session.run, agent=session))


def _inside(widget) -> bool:
    """Laid out, visible, and wholly on the screen (not cut at an edge)."""
    region = widget.screen.find_widget(widget).region
    width, height = widget.app.size
    return widget.display and region.area > 0 and region.right <= width and region.bottom <= height


def _footer_keys(screen) -> dict[str, object]:
    from textual.widgets._footer import FooterKey

    return {key.key: key for key in screen.query(FooterKey)}


async def test_escape_on_a_live_agent_run_asks_and_no_keeps_it_running(tmp_path):
    session = scripted_session(tmp_path, REPLIES, confirm=True)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("escape")  # a second Escape answers no: never more than the first did
        await wait_for(pilot, lambda: app.screen is screen)
        assert session.run.meta.status == "running" and session.pending is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status_reason == "stopped by the user")
        assert session.run.meta.status == "interrupted"


async def test_escape_on_a_form_by_hand_closes_only_the_form(human_app):
    app = human_app
    async with app.run_test(size=SMALL) as pilot:
        screen = await opened_run(app, pilot)
        await pilot.press("enter")  # the first action's form opens
        await wait_for(pilot, lambda: bool(screen.query("#action-form")))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not screen.query("#action-form"))
        assert app.screen is screen and screen.is_live
        assert screen.query_one("#palette").has_focus
        await pilot.press("escape")  # no form: leaving would end the run, so it asks
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is screen)
        assert screen.is_live
        await pilot.press("S")  # Stop by key: the run ends, the screen stays on it
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: screen.run.meta.status == "interrupted")
        assert app.screen is screen


async def test_stop_is_a_palette_command_of_a_live_run(tmp_path):
    session = scripted_session(tmp_path, REPLIES, confirm=True)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        commands = {name: call for name, call, _ in screen.run_commands()}
        assert {"Run: stop this run", "Run: yolo mode", "Run: confirm mode"} <= set(commands)
        commands["Run: stop this run"]()
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "interrupted")
        await pilot.pause()
        # an ended run offers nothing to pause, step or stop, and has no time left
        assert not any(b.display for b in screen.query("#agent-controls Button"))
        assert "left" not in str(screen.query_one("#status").render())
        assert "S" not in _footer_keys(screen) and "m" not in _footer_keys(screen)


async def test_by_hand_on_tasks_asks_naming_the_task_and_h_starts_nothing(tmp_path):
    from tui.screens.tasks import TasksScreen

    task = write_task(tmp_path / "tiny")
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: TasksScreen([task]))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, TasksScreen)
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        assert "tiny" in str(app.screen.query_one("#ask-question").render())
        await pilot.press("n")
        await app.workers.wait_for_complete()
        assert isinstance(app.screen, TasksScreen) and not (tmp_path / "runs").exists()


async def test_the_agent_setup_dialog_fits_80x24_with_its_buttons_in_sight(tmp_path):
    from tui.screens.agent_setup import AgentSetupScreen

    task = write_task(tmp_path / "tiny")
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: AgentSetupScreen(str(task)))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        for selector in ("#setup-start", "#setup-cancel", "#setup-confirm"):
            assert _inside(app.screen.query_one(selector)), selector
        assert app.screen.query_one("#setup-fields").max_scroll_y > 0  # the fields scroll


async def test_the_confirm_panel_fits_and_opens_at_the_first_change(tmp_path):
    old = "".join(f"x{i} = {i}\n" for i in range(60))
    new = old.replace("x40 = 40\n", "x40 = 4000\n")
    replies = "\n---8<---\n".join([
        react("raise x40", "Write File", json.dumps({"file_name": "train.py", "content": new})),
        react("done", "Final Answer", '{"final_answer": "ok"}'),
    ])
    session = scripted_session(tmp_path, replies, confirm=True, train=old)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        body = screen.query_one("#confirm-body", CodeView)
        await wait_for(pilot, lambda: body.scroll_y > 0)
        top, rows = int(body.scroll_y), body.scrollable_content_region.height
        shown = body.text.split("\n")[top:top + rows]
        assert "-x40 = 40" in shown and "+x40 = 4000" in shown
        for selector in ("#confirm-accept", "#confirm-reject", "#confirm-edit"):
            assert _inside(screen.query_one(selector)), selector
        await pilot.press("y")
        await wait_for(pilot, lambda: session.pending is not None and session.pending.action == "Final Answer")
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "finished")


async def test_the_footer_keeps_scores_and_quit_at_80_columns(tmp_path):
    runs, made = make_demo_runs(tmp_path)
    app = LabcoatApp(runs_dir=runs, sandbox="local")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        for key in ("t", "r", "s"):  # Tasks, Runs, Scores
            await pilot.press(key)
            assert await _scores_and_quit_shown(pilot, app), type(app.screen).__name__
        app.push_screen(RunScreen(made[0]))
        assert await _scores_and_quit_shown(pilot, app), type(app.screen).__name__


async def _scores_and_quit_shown(pilot, app, seconds: float = 10.0) -> bool:
    """Whether the footer shows `s` and `q` whole once the screen has settled (polled, not
    one fixed pause: a loaded machine lays a screen out later)."""
    for _ in range(int(seconds / 0.1)):
        await pilot.pause(0.1)
        keys = _footer_keys(app.screen)
        if "s" in keys and "q" in keys and _inside(keys["s"]) and _inside(keys["q"]):
            return True
    return False


async def test_the_runs_screen_shows_improvement_and_success_first(tmp_path):
    from tui.screens.runs import RunsScreen

    runs, _ = make_demo_runs(tmp_path)
    for size in (SMALL, (160, 48)):
        app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: RunsScreen(runs))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#runs-table")
            assert table.ordered_columns[0].label.plain == "improvement"
            cells = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert sorted(cells) == ["+0.0%", "+600.0% ✓"]
            if size == (160, 48):  # every column whole, the raw metric too
                assert sum(c.get_render_width(table) for c in table.ordered_columns) <= size[0]


async def test_confirm_modes_switch_whitelist_ask_before_the_final_answer_and_survive_resume(tmp_path):
    replies = "\n---8<---\n".join([
        react("look", "List Files", '{"dir_path": "."}'),
        react("look again", "List Files", '{"dir_path": "."}'),
        react("read", "Inspect Script Lines",
              '{"script_name": "train.py", "start_line_number": 1, "end_line_number": 2}'),
        react("done", "Final Answer", '{"final_answer": "ok"}'),
    ])
    session = scripted_session(tmp_path, replies, confirm=True)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen

        async def waiting(action: str) -> None:
            await wait_for(pilot, lambda: session.pending is not None and session.pending.action == action)

        await waiting("List Files")
        await pilot.press("Y")  # accept, and List Files never asks again in this run
        await waiting("Inspect Script Lines")
        await wait_for(pilot, lambda: len(screen.steps) == 2)  # the second listing ran unasked
        await pilot.press("m")  # yolo: this proposal still waits for its answer
        assert session.settings.mode == "yolo"
        kept = ReviewSettings.load(session.run.path)  # yolo asks nothing, not the Final Answer
        assert kept.mode == "yolo" and kept.allowed == ["List Files"] and not kept.ask_final
        # back to confirm by the palette (`m` would pass through human mode, which answers
        # the waiting proposal: tests/tui/test_agent_human_mode.py)
        dict((name, call) for name, call, _ in screen.run_commands())["Run: confirm mode"]()
        assert session.settings.mode == "confirm"
        await pilot.press("y")
        await waiting("Final Answer")  # confirm mode: the Final Answer asks
        await pilot.press("S")  # stopped while the Final Answer waits
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "interrupted")
    assert json.loads((session.run.path / SETTINGS_FILE).read_text())["mode"] == "confirm"

    # `u` on the Runs screen resumes it as it was: confirm mode, List Files allowed
    from tui.screens.runs import RunsScreen

    runs = tmp_path / "runs"
    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: RunsScreen(runs))
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        resumed = app.screen.agent
        assert resumed.settings.mode == "confirm" and resumed.settings.allowed == ["List Files"]
        while resumed.run.meta.status != "finished":  # each proposal but a listing asks
            await wait_for(pilot, lambda: resumed.pending is not None or resumed.run.meta.status == "finished")
            answered = resumed.pending
            if answered is not None:
                assert answered.action != "List Files"
                await pilot.press("y")
                await wait_for(pilot, lambda: resumed.pending is not answered)


async def test_saving_an_untouched_edit_form_is_not_an_edit(tmp_path):
    replies = "\n---8<---\n".join([
        react("read", "Inspect Script Lines",
              '{"script_name": "train.py", "start_line_number": 1, "end_line_number": 2}'),
        react("done", "Final Answer", '{"final_answer": "ok"}'),
    ])
    session = scripted_session(tmp_path, replies, confirm=True)
    app = _agent_app(tmp_path, session)
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        await pilot.press("e")
        await wait_for(pilot, lambda: bool(screen.query("#confirm-form #field-script_name")))
        screen.query_one("#confirm-form #field-script_name").focus()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: len(screen.steps) == 1
                       and session.pending is not None and session.pending.action == "Final Answer")
        await pilot.press("y")
        await wait_for(pilot, lambda: session.run.meta.status == "finished")
    step = RunDir.open(session.run.path).steps()[0]
    assert "edited_by_human" not in step.meta and "proposed_args" not in step.meta


async def test_side_tabs_by_key_and_the_workspace_opens_the_script(tmp_path):
    runs, made = make_demo_runs(tmp_path)
    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: RunScreen(made[0]))
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await pilot.pause()
        side = screen.query_one("#side")
        await pilot.press("2")  # under 120 columns the files take the step's place
        await pilot.pause()
        assert side.active == "tab-diff" and _inside(side)
        await pilot.press("3")
        assert side.active == "tab-score"
        await pilot.press("1")
        await pilot.pause()
        # the last step ran the script (it changed result.txt): the script is what opens
        assert screen.query_one("#workspace").opened == "train.py"


async def test_a_script_by_hand_shows_that_it_runs(tmp_path):
    from environments.record.runs import RunMeta
    from tui.widgets.status_line import status_text

    meta = RunMeta(run_id="r", task="t", task_root="/t", actor="human", status="running",
                   limits={"max_time": 60})
    assert "running Execute Script…" in status_text(meta, busy="Execute Script").plain
    meta.status = "finished"
    assert "running" not in status_text(meta, busy="Execute Script").plain
    assert "left" not in status_text(meta).plain


async def test_the_scores_plot_follows_the_selected_row(tmp_path):
    from tui.screens.scores import ScoresScreen

    runs, made = make_demo_runs(tmp_path)
    made[1].meta.task = "other-task"
    made[1].save_meta()
    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: ScoresScreen(runs))
    async with app.run_test(size=SMALL) as pilot:
        screen = app.screen
        await pilot.pause()
        tasks = [row.task for row in screen.rows]
        assert len(set(tasks)) == 2 and screen.shown_task == tasks[0]
        await pilot.press("down")
        await pilot.pause()
        assert screen.shown_task == tasks[1]
        await pilot.press("f5")  # a reload keeps the row, and its plot
        await pilot.pause()
        assert screen.shown_task == tasks[1]
