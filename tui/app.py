"""The labcoat workbench: a Textual app over the same APIs the command line uses."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.command import Hit, Hits, Provider
from textual.screen import Screen

from agent.runner import Budgets
from tui.screens.runs import RunsScreen
from tui.screens.tasks import TasksScreen


class LabcoatCommands(Provider):
    """The ctrl+p palette: commands named by area ("Tasks: …", "Runs: …", "Scores: …")."""

    def _commands(self):
        app: LabcoatApp = self.app  # type: ignore[assignment]
        yield "Tasks: show the task suite", app.action_show_tasks, "pick a task, start a run"
        yield "Runs: browse past runs", app.action_show_runs, "open a run to replay it"
        yield "Scores: report for the runs folder", app.action_show_scores, "success, improvement"
        yield "Help: key bindings", app.action_help, "show the bindings of this screen"
        from environments.suite import suite_task_dirs

        for d in suite_task_dirs():
            yield (f"Run: start {d.name} by hand", partial(app.start_human, d.name),
                   "act on the task yourself through the action palette")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


class LabcoatApp(App):
    CSS_PATH = Path(__file__).parent / "labcoat.tcss"
    TITLE = "labcoat"
    COMMANDS = App.COMMANDS | {LabcoatCommands}
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("t", "show_tasks", "Tasks", id="app.tasks"),
        Binding("r", "show_runs", "Runs", id="app.runs"),
        Binding("s", "show_scores", "Scores", id="app.scores"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def __init__(self, runs_dir: Path = Path("runs"), sandbox: str = "auto",
                 first_screen: Callable[[], Screen] | None = None) -> None:
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self.sandbox = sandbox
        self.first_screen = first_screen or TasksScreen

    def on_mount(self) -> None:
        self.push_screen(self.first_screen())

    def action_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_show_tasks(self) -> None:
        self.switch_screen(TasksScreen())

    def action_show_runs(self) -> None:
        self.push_screen(RunsScreen(self.runs_dir))

    def action_show_scores(self) -> None:
        from tui.screens.scores import ScoresScreen

        self.push_screen(ScoresScreen(self.runs_dir))

    # Starting runs: preparing a task can take a while, so it happens in a worker thread.
    @work(thread=True, exclusive=True, group="start")
    def start_human(self, task: str) -> None:
        from tui.screens.run import RunScreen
        from tui.session import HumanSession

        self.call_from_thread(self.notify, f"preparing {task}…")
        try:
            session = HumanSession.start(task, self.runs_dir, self.sandbox)
        except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
            self.call_from_thread(self.notify, f"cannot start {task}: {err}", severity="error")
            return
        self.call_from_thread(self.push_screen, RunScreen(session.run, human=session))

    @work(thread=True, exclusive=True, group="start")
    def start_agent(self, task: str, model: str, budgets: Budgets, confirm: bool = False) -> None:
        from agent.runner import create_run
        from tui.screens.run import RunScreen
        from tui.session import AgentSession, build_actor

        self.call_from_thread(self.notify, f"preparing {task}…")
        try:
            actor = build_actor(model)
            run, spec = create_run(task, actor, self.runs_dir, sandbox=self.sandbox, model=model,
                                   budgets=budgets, agent=model.split("/", 1)[0])
        except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
            self.call_from_thread(self.notify, f"cannot start {task}: {err}", severity="error")
            return
        session = AgentSession(run, spec, actor, confirm=confirm)
        self.call_from_thread(self.push_screen, RunScreen(run, agent=session))
