"""The Run screen's step browsing: the step list, the selected step, and beside it the files
at that step (workspace, diff, score, and a tree run's Tree tab)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import TabbedContent, TabPane

from agent.tree.view import has_tree, node_of, run_metric
from environments.record.runs import Step
from tui.screens.run_base import RunScreenBase
from tui.widgets.run_summary import RunSummary
from tui.widgets.step_detail import StepDetail
from tui.widgets.step_list import StepList, StepRow
from tui.widgets.tree_view import TreeView
from tui.widgets.workspace import DiffView, WorkspaceView


class StepBrowsing(RunScreenBase):
    """Which step is on show, and keeping the list, the detail and the side tabs on it."""

    def _compose_run_main(self) -> ComposeResult:
        with Horizontal(id="run-main"):
            yield StepList(id="steps")
            yield StepDetail(id="detail")
            with TabbedContent(id="side"):
                with TabPane("Workspace", id="tab-workspace"):
                    yield WorkspaceView(self.run, self._task_scripts(), id="workspace")
                with TabPane("Diff", id="tab-diff"):
                    yield DiffView(id="diff")
                with TabPane("Score", id="tab-score"):
                    yield RunSummary(id="run-summary")

    def _task_scripts(self) -> list[str]:
        """The task's solve scripts, which the Workspace tab opens first (a replay, whose
        task is not loaded, opens the workspace's first Python file)."""
        live = self.human or self.agent
        return list(live.task.solve) if live is not None else []

    def _load_steps(self) -> None:
        """The steps recorded so far (all of a replay's; a live run's others arrive as
        ``add_step``), and the Tree tab when they are a tree run's."""
        self.steps = self.run.steps()
        self.query_one("#steps", StepList).add_rows([self._row(s) for s in self.steps])
        if has_tree(self.steps):
            self._add_tree_tab()

    @staticmethod
    def _row(step: Step) -> StepRow:
        return StepRow(step.index, step.action, bool(step.error))

    def add_step(self, step: Step) -> None:
        self.steps.append(step)
        self.query_one("#steps", StepList).add_row(self._row(step))
        if not self.tree_tab and has_tree([step]):
            self._add_tree_tab()
        self._refresh_status()
        if self.follow:
            self.select(len(self.steps))

    def select(self, index: int, move_cursor: bool = True) -> None:
        """Show step ``index`` (0 = the starting workspace).

        With ``move_cursor`` the list's cursor follows, without posting a highlight: that
        would come back as the user's choice (and, stale by then, ping-pong with this one).
        """
        index = max(0, min(index, len(self.steps)))
        self.current = index
        self.query_one("#detail", StepDetail).show(self._step_at(index))
        self._show_side()
        step_list = self.query_one("#steps", StepList)
        if move_cursor and 1 <= index <= step_list.row_count:
            with step_list.prevent(StepList.Highlighted):
                step_list.cursor = index - 1

    def _step_at(self, index: int) -> Step | None:
        return self.steps[index - 1] if index >= 1 else None

    def _show_side(self) -> None:
        """Bring the visible side tab to the current step; the hidden one waits for its turn.

        Following a live run would otherwise read snapshots and diff files for a tab nobody
        sees; activating a tab calls this again.
        """
        step = self._step_at(self.current)
        changed = step.changed if step else []
        active = self.query_one("#side", TabbedContent).active
        if active == "tab-diff":
            self.query_one("#diff", DiffView).show(self.run, self.current, changed)
        elif active == "tab-tree":
            self.query_one("#tree-view", TreeView).show(self.steps, node_of(step))
        else:
            self.query_one("#workspace", WorkspaceView).show(self.current, changed)

    @on(TabbedContent.TabActivated, "#side")
    def _side_tab_activated(self) -> None:
        self._show_side()

    def _add_tree_tab(self) -> None:
        """The Tree tab, added once: at mount for a tree run, or when a live run's first
        tagged step arrives (the screen cannot know the actor's kind from the trace before)."""
        if self.tree_tab:
            return
        self.tree_tab = True
        metric, higher = run_metric(self.run)
        view = TreeView(self.run, metric, higher, id="tree-view")
        self.query_one("#side", TabbedContent).add_pane(TabPane("Tree", view, id="tab-tree"))

    @on(StepList.Highlighted, "#steps")
    def _row_highlighted(self, event: StepList.Highlighted) -> None:
        if event.row + 1 != self.current:
            self.follow = event.row + 1 == len(self.steps)
            self.select(event.row + 1, move_cursor=False)

    # --- keys ------------------------------------------------------------------------------
    def action_prev_step(self) -> None:
        self.follow = False
        self.select(self.current - 1)

    def action_next_step(self) -> None:
        self.select(self.current + 1)
        self.follow = self.current == len(self.steps)

    def action_first_step(self) -> None:
        self.follow = False
        self.select(1 if self.steps else 0)

    def action_last_step(self) -> None:
        self.follow = True
        self.select(len(self.steps))

    def action_side_tab(self, tab: str) -> None:
        """Show a side tab by key (under 120 columns the files take the step's place)."""
        self.query_one("#side", TabbedContent).active = tab
        if self.has_class("-narrow") and not self.has_class("-show-side"):
            self.action_toggle_side()

    def on_resize(self) -> None:
        """Crossing 120 columns changes which keys apply (``w``): the footer follows."""
        self.call_after_refresh(self.refresh_bindings)

    def action_toggle_side(self) -> None:
        self.toggle_class("-show-side")
        if self.has_class("-show-side"):
            self._show_side()

    def action_fold_reasoning(self) -> None:
        self.query_one("#detail", StepDetail).toggle_reasoning()

    def action_scroll_detail(self, direction: int) -> None:
        detail = self.query_one("#detail", StepDetail)
        detail.scroll_relative(y=3 * direction, animate=False)
