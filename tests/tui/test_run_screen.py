"""The Run screen's panes on a finished demo run: step list, detail folding, workspace, diff.

The demo run (``make_demo_runs``): 1 List Files (changes nothing), 2 Write File train.py,
3 Execute Script (writes result.txt), 4 Final Answer (changes nothing).
"""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent
from textual.widgets._footer import FooterKey

from environments.record.runs import RunDir, Step
from tests.tui.conftest import SIZE, make_demo_runs
from tui.app import LabcoatApp
from tui.screens.run import RunScreen
from tui.widgets.code_view import CodeView
from tui.widgets.step_detail import StepSections
from tui.widgets.step_list import StepList, StepRow
from tui.widgets.workspace import DiffView, WorkspaceView


@pytest.fixture
def demo_run(tmp_path) -> RunDir:
    _, made = make_demo_runs(tmp_path)
    return RunDir.open(made[0].path)


def _app(run: RunDir) -> LabcoatApp:
    return LabcoatApp(runs_dir=run.path.parent, sandbox="local", first_screen=lambda: RunScreen(run))


def _viewer(screen) -> str:
    return screen.query_one("#ws-file", CodeView).text


def _diff(screen) -> DiffView:
    return screen.query_one("#diff", DiffView)


async def test_diff_is_computed_when_its_tab_is_shown_for_the_step_then_selected(demo_run):
    async with _app(demo_run).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.press("g", "l")  # step 2, the Workspace tab in front
        await pilot.pause()
        assert screen.current == 2 and _diff(screen).index is None  # nothing diffed while hidden
        screen.query_one("#side", TabbedContent).active = "tab-diff"
        await pilot.pause()
        assert _diff(screen).index == 2
        assert "+open('result.txt','w').write('42')" in _diff(screen).text
        await pilot.press("l")  # with the Diff tab in front, navigation updates it
        await pilot.pause()
        assert _diff(screen).index == 3 and "+42" in _diff(screen).text
        await pilot.press("l")
        await pilot.pause()
        assert _diff(screen).text == "This step changed no file."
        workspace = screen.query_one("#workspace", WorkspaceView)
        assert workspace.index == 2  # the hidden Workspace tab stayed at step 2 ...
        screen.query_one("#side", TabbedContent).active = "tab-workspace"
        await pilot.pause()
        assert workspace.index == 4  # ... and catches up when shown


async def test_workspace_opens_the_script_and_keeps_it_over_a_changed_data_file(demo_run):
    async with _app(demo_run).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.press("g")  # step 1 changed nothing: the script opens, as it was then
        await pilot.pause()
        assert "sum(nums)" in _viewer(screen)
        await pilot.press("l")  # step 2 wrote train.py
        await pilot.pause()
        assert "open('result.txt','w').write('42')" in _viewer(screen)
        await pilot.press("l", "l")  # step 3 wrote result.txt (data: the script stays open)
        await pilot.pause()
        assert screen.current == 4 and "write('42')" in _viewer(screen)
        workspace = screen.query_one("#workspace", WorkspaceView)
        workspace.open_file("result.txt")  # a file opened by hand stays open ...
        await pilot.press("h")
        await pilot.pause()
        assert workspace.opened == "result.txt" and _viewer(screen) == "42"
        await pilot.press("g")  # ... until a step where it does not exist: the script again
        await pilot.pause()
        assert workspace.opened == "train.py" and "sum(nums)" in _viewer(screen)


async def test_reasoning_folds_with_f_and_a_section_with_a_click_on_its_header(demo_run):
    async with _app(demo_run).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        sections = screen.query_one("#detail-text", StepSections)

        def text() -> str:
            return str(sections.render())

        await pilot.pause()
        assert "▶ Reflection" in text() and "Looking at the files." not in text()
        assert "▼ Thought" in text() and "Step 4: Final Answer." in text()
        await pilot.press("f")
        await pilot.pause()
        assert "▼ Reflection" in text() and "Looking at the files." in text()
        await pilot.press("f")
        await pilot.pause()
        assert "Looking at the files." not in text()
        assert await pilot.click("#detail-text", offset=(2, 0))  # line 0: the Reflection header
        await pilot.pause()
        assert "Looking at the files." in text()
        await pilot.press("h")  # the fold state outlives the step shown
        await pilot.pause()
        assert "Looking at the files." in text() and "Step 3: Execute Script." in text()


async def test_step_list_click_selects_and_live_steps_follow_unless_navigated_away(demo_run):
    async with _app(demo_run).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        steps = screen.query_one("#steps", StepList)
        await pilot.pause()
        assert screen.current == 4 and steps.cursor == 3
        assert await pilot.click("#steps", offset=(3, 2))  # line 0 is the header: row 2 is step 2
        await pilot.pause()
        assert screen.current == 2 and steps.cursor == 1 and not screen.follow

        def live(index: int) -> Step:
            return Step(index=index, actor="agent", action="Execute Script",
                        args={"script_name": "train.py"}, observation="ok")

        screen.add_step(live(5))
        await pilot.pause()
        assert screen.current == 2 and steps.cursor == 1  # the user is reading step 2
        await pilot.press("G")
        await pilot.pause()
        screen.add_step(live(6))
        await pilot.pause()
        assert screen.current == 6 and steps.cursor == 5 and steps.row_count == 6


async def test_step_list_draws_the_rows_on_screen_with_the_cursor_in_view(tmp_path):
    from textual.app import App

    rows = [(i, "Write File", i == 999) for i in range(1, 1001)]

    class OneList(App):
        def compose(self):
            yield StepList(id="steps")

    async with OneList().run_test(size=(40, 12)) as pilot:
        steps = pilot.app.query_one(StepList)
        steps.add_rows([StepRow(*row) for row in rows])
        with steps.prevent(StepList.Highlighted):
            steps.cursor = 999
        await pilot.pause()
        lines = [steps.render_line(y).text for y in range(steps.size.height)]
        assert lines[0].split() == ["#", "action"]
        assert lines[-1].split() == ["1000", "Write", "File", "✓"]
        assert lines[-2].split() == ["999", "Write", "File", "✗"]
        await pilot.press("home")
        await pilot.pause()
        assert steps.cursor == 0 and steps.render_line(1).text.split()[0] == "1"


async def test_footer_keeps_its_keys_when_the_bindings_it_shows_do_not_change(demo_run):
    async with _app(demo_run).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.pause()
        before = list(screen.query(FooterKey))
        assert any(key.description == "Quit" for key in before)
        screen.refresh_bindings()
        await pilot.pause()
        assert list(screen.query(FooterKey)) == before  # same widgets: not rebuilt
        # a key RunScreen does not bind: binding a bound one appends to the list of bindings
        # the class shares with every later RunScreen (and would show in their footers)
        screen._bindings.bind("ctrl+t", "app.bell", "Ring")
        screen.refresh_bindings()
        await pilot.pause()
        assert any(key.description == "Ring" for key in screen.query(FooterKey))


async def test_code_view_draws_long_files_a_screen_at_a_time(tmp_path):
    from textual.app import App

    code = "".join(f"x_{n} = {n}\n" for n in range(1, 301))

    class OneView(App):
        def compose(self):
            yield CodeView(id="code")

    async with OneView().run_test(size=(40, 10)) as pilot:
        view = pilot.app.query_one(CodeView)
        view.show_code(code, "python")
        await pilot.pause()
        assert view.virtual_size.height == 300
        view.scroll_to(y=290, animate=False)
        await pilot.pause()
        assert view.render_line(0).text.split()[:2] == ["291", "x_291"]
        view.show_code(code.replace("= 1\n", "= 0\n"), "python", keep_scroll=True)  # a new version
        await pilot.pause()
        assert view.scroll_y == 290
        view.show_code("print('other file')\n", "python")  # another file starts at the top
        await pilot.pause()
        assert view.scroll_y == 0 and view.render_line(0).text.split() == ["1", "print('other", "file')"]
