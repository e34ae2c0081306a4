"""The Tasks screen: the suite, a task's research problem, and starting a run from here."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, DataTable, Header, Markdown

from environments.scoring.baselines import known_baseline
from environments.task.spec import TaskSpec
from environments.task.suite import scan_tasks
from environments.untrusted.words import metric
from tui.terminal_text import safe_text
from tui.widgets.footer import KeysFooter


class TasksScreen(Screen):
    HELP_TITLE = "Tasks"
    HELP = """
The task suite: pick a task (its research problem is shown on the right), then start a run
by hand (`b`: you act through the same actions an agent has; it asks first, naming the task)
or with an agent (`a`: choose a model, budgets and whether to confirm each action). Every run
is recorded under the runs folder and scored when it ends.
"""
    BINDINGS = [
        Binding("b", "start_human", "By hand", id="tasks.start_human"),
        Binding("a", "start_agent", "Agent", id="tasks.start_agent"),
    ]

    def __init__(self, task_dirs: list[Path] | None = None) -> None:
        """``task_dirs`` lists other task folders instead of the shipped suite."""
        super().__init__()
        self.task_dirs = task_dirs
        self.tasks: list[TaskSpec] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="tasks-main"):
            yield DataTable(id="tasks-table", cursor_type="row", zebra_stripes=True)
            with Vertical(id="task-side"):
                yield Markdown("", id="task-problem")
                with Horizontal(id="task-buttons"):
                    yield Button("Start by hand", id="start-human", variant="primary")
                    yield Button("Start with agent", id="start-agent")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.title = "labcoat · tasks"
        self.tasks, errors = scan_tasks(self.task_dirs)
        for err in errors:
            self.notify(str(err), title="broken task folder", severity="error", timeout=10)
        table = self.query_one("#tasks-table", DataTable)
        table.add_columns("name", "kind", "metric", "baseline", "tools")
        for t in self.tasks:
            base = known_baseline(t)
            arrow = "↑" if t.higher_is_better else "↓"
            cells = (t.name, t.kind, f"{t.metric} {arrow}",
                     "measure" if base is None else metric(base), ", ".join(t.tools) or "—")
            table.add_row(*(safe_text(c) for c in cells), key=t.name)  # a str cell is markup
        if self.tasks:
            self.show_task(self.tasks[0])

    @property
    def selected(self) -> TaskSpec | None:
        table = self.query_one("#tasks-table", DataTable)
        if not self.tasks:
            return None
        return self.tasks[min(table.cursor_row, len(self.tasks) - 1)]

    def show_task(self, task: TaskSpec) -> None:
        threshold = f"{task.success_threshold:.0%}"
        header = (f"# {task.name}\n\n*{task.summary or task.kind + ' task'}* — metric "
                  f"**{task.metric}** ({task.direction} is better), success at +{threshold}\n\n")
        self.query_one("#task-problem", Markdown).update(header + task.research_problem)

    @on(DataTable.RowHighlighted, "#tasks-table")
    def _highlight(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.tasks):
            self.show_task(self.tasks[event.cursor_row])

    @on(Button.Pressed, "#start-human")
    def action_start_human(self) -> None:
        """Ask first, naming the task: a run by hand starts a sandbox and is recorded."""
        from tui.screens.ask import AskScreen

        task = self.selected
        if task is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.start_human(str(task.root))

        self.app.push_screen(AskScreen(f"Start a run of {task.name} by hand?", "Start", "Cancel", danger=False),
                             answered)

    @on(Button.Pressed, "#start-agent")
    def action_start_agent(self) -> None:
        if self.selected is not None:
            from tui.screens.agent_setup import AgentSetupScreen

            self.app.push_screen(AgentSetupScreen(str(self.selected.root)))
