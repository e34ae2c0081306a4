"""The labcoat workbench: a Textual app over the same APIs the command line uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from agent.config import ActorConfig, Budgets
from tui.messages import RunEnded, RunScored
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
        run_screen = getattr(self.screen, "run_commands", None)  # the Run screen's own
        if run_screen is not None:
            yield from run_screen()
        from environments.task.suite import suite_task_dirs

        for d in suite_task_dirs():
            yield (f"Run: start {d.name} by hand", partial(app.start_human, str(d)),
                   "act on the task yourself through the action palette")

    async def discover(self) -> Hits:
        """Shown before anything is typed: labcoat's commands, not only Textual's."""
        for name, callback, help_text in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


@dataclass(frozen=True)
class DeepLink:
    """Where ``labcoat tui`` opens: a past run, an agent run (``model``), or a run by hand."""

    task: str | None = None
    model: str | None = None
    confirm: bool = False
    run: Path | None = None


class LabcoatApp(App):
    CSS_PATH = Path(__file__).parent / "labcoat.tcss"
    TITLE = "labcoat"
    COMMANDS = App.COMMANDS | {LabcoatCommands}
    BINDINGS = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("question_mark", "help", "Help", show=False, id="app.help_key"),
        Binding("t", "show_tasks", "Tasks", id="app.tasks"),
        Binding("r", "show_runs", "Runs", id="app.runs"),
        Binding("s", "show_scores", "Scores", id="app.scores"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def __init__(self, runs_dir: Path = Path("runs"), sandbox: str = "auto",
                 first_screen: Callable[[], Screen] | None = None,
                 link: DeepLink | None = None) -> None:
        super().__init__()
        self.runs_dir = Path(runs_dir)
        self.sandbox = sandbox
        self.first_screen = first_screen or TasksScreen
        self.link = link

    def on_mount(self) -> None:
        self.push_screen(self.first_screen())
        if self.link is not None:
            self.follow(self.link)

    def follow(self, link: DeepLink) -> None:
        """Open what ``labcoat tui --task/--model/--confirm/--run`` named, over the Tasks
        screen (Escape comes back to it)."""
        if link.run is not None:
            from environments.record.runs import RunDir
            from tui.screens.run import RunScreen

            self.push_screen(RunScreen(RunDir.open(link.run, newer_ok=True)))
        elif link.task and link.model:
            self.start_agent(link.task, ActorConfig(model=link.model), Budgets(), link.confirm)
        elif link.task:
            self.start_human(link.task)

    # Quitting: a live run ends with the app, so `q` asks first (as Escape and `S` do on the
    # Run screen), then stops it in sight (StoppingScreen) rather than behind a blank terminal.
    quitting = False

    def live_run_screens(self) -> list:
        """The Run screens (anywhere in the stack) whose run is live and driven here."""
        from tui.screens.run_base import RunScreenBase

        return [s for s in self.screen_stack if isinstance(s, RunScreenBase)
                and (s.agent is not None or s.human is not None) and s.is_live]

    async def action_quit(self) -> None:
        if self.quitting:
            return  # stopping already: the screen says so
        live = self.live_run_screens()
        if not live:
            self.exit()
            return
        from tui.screens.ask import AskScreen

        ids = ", ".join(s.run.meta.run_id for s in live)
        question = (f"Quit labcoat? The live run {ids} ends interrupted (not scored now: `c` on the "
                    "Runs screen scores it, `u` resumes it).")

        def answered(yes: bool | None) -> None:
            if yes:
                self.quit_after_stopping(live)

        self.push_screen(AskScreen(question, "Stop and quit", "Keep running"), answered)

    def quit_after_stopping(self, screens: list) -> None:
        from tui.screens.stopping import StoppingScreen

        self.quitting = True  # runs that end now are not scored on the way out
        self.push_screen(StoppingScreen([s.run.meta.run_id for s in screens]))
        self._stop_then_exit(screens)

    @work(thread=True, exclusive=True, group="quit")
    def _stop_then_exit(self, screens: list) -> None:
        for screen in screens:
            if screen.agent is not None:
                screen.agent.close()
            if screen.human is not None:
                screen.human.close()
        self.call_from_thread(self.exit)

    def action_help(self) -> None:
        """labcoat's help for the screen shown (its purpose and the keys that apply now)."""
        from tui.screens.help import HelpScreen, help_markdown

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(help_markdown(self.screen)))

    def action_show_tasks(self) -> None:
        self.switch_screen(TasksScreen())

    def action_show_runs(self) -> None:
        self.push_screen(RunsScreen(self.runs_dir))

    def action_show_scores(self) -> None:
        from tui.screens.scores import ScoresScreen

        self.push_screen(ScoresScreen(self.runs_dir))

    # Scoring: as the CLI does when a run ends; a thread, since an eval can take minutes.
    def on_run_ended(self, message: RunEnded) -> None:
        """Every run the TUI drove is scored when it ends (a screen's RunEnded bubbles here),
        but not one stopped on the way out: its eval would hold the closing terminal."""
        if not self.quitting:
            self.score_run(message.run.path)

    @work(thread=True, group="score")
    def score_run(self, run_path: Path, all_steps: bool = False) -> None:
        from tui.scoring import score, score_line

        what = "every step of " if all_steps else ""
        self.post_message(RunScored(run_path, f"scoring {what}{Path(run_path).name}…"))
        try:
            line = score_line(score(run_path, all_steps))
        except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
            self.post_message(RunScored(run_path, f"cannot score {Path(run_path).name}: {err}", True))
            return
        self.post_message(RunScored(run_path, line))

    def on_run_scored(self, message: RunScored) -> None:
        self.notify(message.line, markup=False, severity="error" if message.error else "information")
        if not self.screen_stack:  # scored as the app closes (a run closed on the way out)
            return
        show = getattr(self.screen, "show_score", None)  # the screen shown may list the run
        if show is not None:
            show(message)

    # Starting runs: preparing a task can take a while, so it happens in a worker thread.
    @work(thread=True, exclusive=True, group="start")
    def start_human(self, task: str) -> None:
        from agent import session
        from agent.config import ActorConfig
        from tui.screens.run import RunScreen
        from tui.session import HumanSession

        self.call_from_thread(self.notify, f"preparing {task}…", markup=False)
        try:
            begun = session.start(task, ActorConfig(kind="human"), None, self.runs_dir, sandbox=self.sandbox)
            by_hand = HumanSession(begun.run, begun.task, begun.actor)
        except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
            self.call_from_thread(self.notify, f"cannot start {task}: {err}", severity="error",
                                  markup=False)
            return
        self.call_from_thread(self.push_screen, RunScreen(by_hand.run, human=by_hand))

    @work(thread=True, exclusive=True, group="start")
    def resume_run(self, run_path: Path) -> None:
        """Open a stopped run live again: a person's as a session by hand, an agent's with the
        actor its stored configuration makes (``agent.session.resume``; ``drive`` continues
        from the trace)."""
        from agent import session
        from agent.approval import ReviewSettings
        from environments.record.runs import RunDir
        from tui.screens.run import RunScreen
        from tui.session import AgentSession, HumanSession

        try:
            begun = session.resume(RunDir.open(run_path))
            if begun.run.meta.actor == "human":
                screen = RunScreen(begun.run, human=HumanSession(begun.run, begun.task, begun.actor))
            else:
                review = ReviewSettings.load(begun.run.path) or False  # reviewed as it was started
                screen = RunScreen(begun.run, agent=AgentSession(begun.run, begun.task, begun.actor,
                                                                 confirm=review))
        except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
            self.call_from_thread(self.notify, f"cannot resume {Path(run_path).name}: {err}",
                                  severity="error", markup=False)
            return
        self.call_from_thread(self.push_screen, screen)

    @work(thread=True, exclusive=True, group="start")
    def start_agent(self, task: str, config: ActorConfig, budgets: Budgets, confirm: bool = False) -> None:
        """A new agent run (``agent.session.start``), driven by its run screen's worker."""
        from agent import session
        from tui.screens.run import RunScreen
        from tui.session import AgentSession

        self.call_from_thread(self.notify, f"preparing {task}…", markup=False)
        try:
            begun = session.start(task, config, budgets, self.runs_dir, sandbox=self.sandbox)
        except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
            self.call_from_thread(self.notify, f"cannot start {task}: {err}", severity="error",
                                  markup=False)
            return
        agent = AgentSession(begun.run, begun.task, begun.actor, confirm=confirm)
        self.call_from_thread(self.push_screen, RunScreen(begun.run, agent=agent))
