"""The Run screen: step list, step detail, workspace and diff (and a tree run's solution tree);
live for human and agent runs."""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Button, Header

from environments.record.runs import RunDir
from tui.messages import RunEnded, RunScored, StepRecorded
from tui.screens.run_hand import ByHand, HandsWanted
from tui.screens.run_live import MODE_NOTES, LiveAgent
from tui.screens.run_steps import StepBrowsing
from tui.terminal_text import visible
from tui.widgets.action_form import ActionForm
from tui.widgets.editor import EDIT_FILE
from tui.widgets.footer import KeysFooter
from tui.widgets.status_line import StatusLine

__all__ = ["MODE_NOTES", "HandsWanted", "RunScreen", "open_fork_by_hand"]


class RunScreen(LiveAgent, ByHand, StepBrowsing):
    """A run, finished (replay) or live (a person's or an agent's).

    Composed from its parts (``run_steps``, ``run_hand``, ``run_confirm``, ``run_live``); what
    stays here is what spans them: the layout, the keys, stopping and leaving, and the steps
    and ends a live run reports.
    """

    # under 120 columns the step list, the step and the files do not fit side by side: the
    # files (workspace, diff, score) take the step's place while `w` shows them
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    # under 40 rows a proposal's body gets fewer lines, so the steps stay in sight
    VERTICAL_BREAKPOINTS = [(0, "-short"), (40, "-tall")]
    HELP_TITLE = "Run"
    HELP = """
One run: its steps on the left, the selected step in the middle (reasoning, action,
observation; click a header or press `f` to fold), and on the right the workspace at that
step, the step's diff, and the run's score (why it ended, its score, the per-step curve).
A tree run (`--agent tree`) also has a Tree tab: every node with its parent, metric and
status; select one to read its script, `d` to see its diff against its parent.
`K` (on a run that has ended) forks it at the selected step and continues by hand.
`1`-`4` show the Workspace, Diff, Score and Tree tabs; in a terminal under 120 columns `w`
swaps the step for the files and back. `h`/`l` step back and forth, `j`/`k` scroll the step.

**By hand:** choose an action in the list (Enter), fill the form (prefilled), Enter or
ctrl+s submits; Escape closes the form. *Edit a file (editor)* opens the file in an editor;
ctrl+s saves it as a Write File step. `S`, or leaving the screen, ends the run
(`interrupted`, after asking) and scores it; `q` asks too, and quits once the run has stopped
(that run is scored later: `c` on the Runs screen). A run that has ended offers no actions.

**Agent:** space pauses and resumes, `n` lets one step happen, `S` stops the run
(`interrupted`, after asking; Escape and `q` ask too). `m` cycles confirm mode (each proposed
action waits), yolo mode (actions run unasked, the Final Answer too: nothing waits for you)
and human mode (you act by hand with the action forms, the model is not
asked, until you switch back; each step records who took it); the palette has each mode too.
The mode is kept with the run, so resuming it asks the same way. A
waiting proposal shows exactly what will run (a file write as its diff, opened at its first
change): `y` accepts, `Y` accepts and never asks again for that action in this run, `e`
edits it in a form, `x` rejects it with a reason the agent reads (nothing runs). The time
left counts wall-clock time since the run started. When the agent asks for help (Request
Help, on a run started with `--enable-actions`), its question waits in a dialog: Enter sends
your answer, Escape gives none.
"""

    BINDINGS = [
        Binding("h", "prev_step", "Prev step", show=False, id="run.prev_step"),
        Binding("l", "next_step", "Next step", show=False, id="run.next_step"),
        Binding("g", "first_step", "First", show=False, id="run.first_step"),
        Binding("G", "last_step", "Last", show=False, id="run.last_step"),
        Binding("j", "scroll_detail(1)", "Scroll down", show=False, id="run.scroll_down"),
        Binding("k", "scroll_detail(-1)", "Scroll up", show=False, id="run.scroll_up"),
        Binding("space", "toggle_pause", "Pause", show=False, id="run.toggle_pause"),
        Binding("n", "single_step", "Step", show=False, id="run.single_step"),
        Binding("S", "stop", "Stop", id="run.stop"),
        Binding("m", "switch_mode", "Mode", id="run.mode"),
        Binding("f", "fold_reasoning", "Fold", show=False, id="run.fold_reasoning"),
        Binding("w", "toggle_side", "Files", id="run.toggle_side"),
        Binding("1", "side_tab('tab-workspace')", "Workspace tab", show=False, id="run.tab_workspace"),
        Binding("2", "side_tab('tab-diff')", "Diff tab", show=False, id="run.tab_diff"),
        Binding("3", "side_tab('tab-score')", "Score tab", show=False, id="run.tab_score"),
        Binding("4", "side_tab('tab-tree')", "Tree tab", show=False, id="run.tab_tree"),
        Binding("y", "decide('accept')", "Accept", show=False, id="run.accept"),
        Binding("Y", "decide('always')", "Always allow", show=False, id="run.always"),
        Binding("e", "decide('edit')", "Edit", show=False, id="run.edit"),
        Binding("x", "decide('reject')", "Reject", show=False, id="run.reject"),
        Binding("K", "fork_here", "Fork here", show=False, id="run.fork_here"),
        Binding("escape", "back", "Back", show=False, id="run.back"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield StatusLine(id="status")
        yield from self._compose_run_main()
        if self.human is not None:
            yield from self._compose_hand_panel(
                [*self.human.actions, EDIT_FILE, *self._model_only()], "Choose an action.")
        if self.agent is not None:
            yield from self._compose_agent_controls()
            # human mode: the person's action form, as in a run by hand (filled once the run
            # has its actions, shown while the mode is human)
            yield from self._compose_hand_panel(
                [], "Waiting for the run…", "" if self.agent.settings.mode == "human" else "hidden")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.title = f"labcoat · {self.run.meta.run_id}"
        self._load_steps()
        self._refresh_status()
        self._show_summary()
        self.select(len(self.steps))
        if self.agent is not None:
            self.start_agent()
        if self.human is not None:
            self.query_one("#palette").focus()  # a person starts by choosing an action

    # --- keys ------------------------------------------------------------------------------
    AGENT_ACTIONS = frozenset({"toggle_pause", "single_step", "switch_mode"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Agent keys only on a live agent run (an ended run has nothing to pause or stop);
        the answers to a proposal only while one waits."""
        if action == "toggle_side":
            return self.has_class("-narrow")
        if action == "side_tab":
            return parameters[0] != "tab-tree" or self.tree_tab
        if action in self.AGENT_ACTIONS:
            return self.agent is not None and self.is_live
        if action == "stop":
            return (self.agent is not None or self.human is not None) and self.is_live
        if action == "decide":
            return self.agent is not None and self.agent.pending is not None
        return True

    def run_commands(self):
        """The palette's commands for this run (``LabcoatCommands`` asks the screen shown)."""
        if (self.agent is not None or self.human is not None) and self.is_live:
            yield "Run: stop this run", self.action_stop, "it ends interrupted (asks first)"
        if self.agent is not None and self.is_live:
            for mode, what in MODE_NOTES.items():
                yield f"Run: {mode} mode", lambda m=mode: self.set_mode(m), what
        for key, tab in (("tab-workspace", "Workspace"), ("tab-diff", "Diff"), ("tab-score", "Score")):
            yield f"Run: show the {tab} tab", lambda k=key: self.action_side_tab(k), "the files beside the step"

    # --- leaving and stopping ----------------------------------------------------------------
    async def action_back(self) -> None:
        """Escape: closes an open form first; leaving a live run asks, since it ends the run."""
        if await self._close_form():
            return
        if (self.agent is not None or self.human is not None) and self.is_live:
            self.action_stop(leave=True)
        else:
            self.app.pop_screen()

    def action_stop(self, leave: bool = False) -> None:
        """End the live run ``interrupted`` (after asking); ``leave`` also closes the screen."""
        from tui.screens.ask import AskScreen

        if not self.is_live:
            if leave:
                self.app.pop_screen()
            return
        who = "the agent's run" if self.agent is not None else "your run"
        question = (f"Stop {who} {self.run.meta.run_id}? It ends interrupted and is scored "
                    "(it can be resumed from the Runs screen, `u`)."
                    + (" Then back to the screen before." if leave else ""))

        def answered(yes: bool | None) -> None:
            if not yes:
                return
            if leave:
                self.app.pop_screen()  # unmounting stops the run (on_unmount)
            else:
                self._stop_now()

        self.app.push_screen(AskScreen(question, "Stop" + (" and leave" if leave else ""), "Keep running"),
                             answered)

    def _stop_now(self) -> None:
        if self.agent is not None:
            self.agent.stop()
            self._hide_confirm()
        elif self.human is not None and self.is_live:
            self.human.close()
            self.post_message(RunEnded(self.run))

    @on(Button.Pressed, "#agent-stop")
    def _stop(self) -> None:
        """Stopping (once confirmed) answers a waiting proposal too: it is not run, the run
        ends interrupted."""
        self.action_stop()

    def on_unmount(self) -> None:
        """Leaving a live run stops it; it is still scored when it ends (by the app)."""
        if self.agent is not None:
            app = self.app
            self.agent.on_end_cb = lambda run: app.post_message(RunEnded(run))
            self.agent.stop()
        if self.human is not None:
            live = self.is_live
            self.human.close()
            if live:
                self.app.score_run(self.run.path)

    # --- what a live run reports -------------------------------------------------------------
    def on_step_recorded(self, message: StepRecorded) -> None:
        self.busy = ""
        self.add_step(message.step)
        if self.hands is not None:  # done: back to choosing the next action
            self.query_one("#form-holder").loading = False
            self.query_one("#palette").focus()

    @on(ActionForm.Submitted)
    def _submit(self, event: ActionForm.Submitted) -> None:
        """One message for two forms: the person's action by hand, or their edit of the
        agent's proposal (which is an edit only when it changes what was proposed)."""
        event.stop()
        if self.hands is not None and event.control.id == "action-form":
            self.human_step(event.action, event.args)
        elif self.agent is not None:
            self.agent.decide(self._edited(event.action, event.args))
            self._hide_confirm()

    async def on_run_ended(self, message: RunEnded) -> None:
        await self._end_hands()  # before the notice: no action is offered after the end
        self._refresh_status()
        self._show_summary()
        meta = message.run.meta
        self.notify(visible(f"run {meta.status}: {meta.status_reason}"), markup=False,
                    severity="error" if meta.status == "error" else "information")
        if self.agent is not None:
            self._hide_confirm()
        self.refresh_bindings()  # Pause, Step, Stop and the mode no longer apply

    def show_score(self, message: RunScored) -> None:
        """The app scored a run (at its end, or asked for): refresh the Score tab if it is ours."""
        if message.run_path == self.run.path:
            self._show_summary()

    # --- forking -----------------------------------------------------------------------------
    def action_fork_here(self) -> None:
        """Continue this (ended) run by hand from the selected step: a fork, as the Runs
        screen's ``k`` makes, at the step on screen."""
        if self.human is not None or self.agent is not None:
            self.notify("fork a run once it has ended (from the Runs screen, or here when you "
                        "open it again)", severity="warning")
            return
        self.fork_here(self.current)

    @work(thread=True, exclusive=True, group="fork")
    def fork_here(self, step: int) -> None:
        open_fork_by_hand(self, self.run.path, step)


def open_fork_by_hand(screen, run_path: Path, step: int) -> None:
    """In a worker of ``screen``: fork ``run_path`` at ``step`` as a person's run and push its
    live run view; a refusal (step out of range, snapshots missing) is a notice, never a crash."""
    from agent import session as sessions
    from agent.config import ActorConfig
    from tui.session import HumanSession

    try:
        parent = RunDir.open(run_path)
        begun = sessions.fork(parent, step, ActorConfig(kind="human", seed=parent.meta.seed))
        fork = begun.run
        session = HumanSession(fork, begun.task, begun.actor)
    except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
        screen.app.call_from_thread(screen.notify, visible(f"cannot fork {Path(run_path).name} at step "
                                                           f"{step}: {err}"), severity="error", markup=False)
        return
    screen.app.call_from_thread(screen.app.push_screen, RunScreen(fork, human=session))
