"""The Run screen: step list, step detail, workspace and diff (and a tree run's solution tree);
live for human and agent runs."""

from __future__ import annotations

from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message  # noqa: E402
from textual.screen import Screen
from textual.widgets import (
    Button,
    Header,
    Input,
    OptionList,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option

from agent.approval import FINAL_ANSWER, MODES

#: actions an agent's model performs (agent/llm_actions.py's registry); a person's run has none
from agent.llm_actions import MODEL_ACTIONS  # noqa: E402
from agent.tree.view import has_tree, node_of, run_metric
from environments.record.runs import RunDir, Step
from tui.messages import (
    ActionFailed,
    HelpRequested,
    ProposalPending,
    RunEnded,
    RunScored,
    StepRecorded,
)
from tui.session import AgentSession, Decision, HumanSession
from tui.terminal_text import visible
from tui.widgets.action_form import ActionForm
from tui.widgets.editor import EDIT_FILE, FileEditor
from tui.widgets.footer import KeysFooter
from tui.widgets.proposal import ProposalPanel
from tui.widgets.run_summary import RunSummary
from tui.widgets.status_line import StatusLine
from tui.widgets.step_detail import StepDetail
from tui.widgets.step_list import StepList, StepRow
from tui.widgets.tree_view import TreeView
from tui.widgets.workspace import DiffView, WorkspaceView

#: what each confirm mode does, said when it is switched on (key `m`, the palette)
MODE_NOTES = {"confirm": "each proposed action waits for you", "yolo": "actions run unasked",
              "human": "you act by hand; the model is not asked"}


class HandsWanted(Message):
    """Human mode: the agent's run waits for the person's action (posted from its worker)."""


class RunScreen(Screen):
    """A run, finished (replay) or live (a person's or an agent's)."""

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
(`interrupted`, after asking) and scores it.

**Agent:** space pauses and resumes, `n` lets one step happen, `S` stops the run
(`interrupted`, after asking; Escape asks too). `m` cycles confirm mode (each proposed
action waits), yolo mode (actions run unasked; the Final Answer still waits once confirm or
human mode was on) and human mode (you act by hand with the action forms, the model is not
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

    def __init__(self, run: RunDir, *, human: HumanSession | None = None,
                 agent: AgentSession | None = None) -> None:
        super().__init__()
        self.run = run
        self.human = human
        self.agent = agent
        self.steps: list[Step] = []
        self.current = 0
        self.follow = True
        self.tree_tab = False  # whether the Tree tab was added (a tree run's)
        self.busy = ""  # the action by hand running now, said on the status line

    def compose(self) -> ComposeResult:
        yield Header()
        yield StatusLine(id="status")
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
        if self.human is not None:
            with Horizontal(id="human-panel"):
                yield OptionList(*self.human.actions, EDIT_FILE, *self._model_only(),
                                 id="palette", markup=False)
                yield Vertical(Static("Choose an action.", id="form-hint"), id="form-holder")
        if self.agent is not None:
            with Horizontal(id="agent-controls"):
                # the buttons name their keys, so the footer keeps room for the app's
                yield Button("Pause (space)", id="agent-pause")
                yield Button("Step (n)", id="agent-step")
                yield Button("Stop (S)", id="agent-stop", variant="error")
                yield Static("", id="agent-state")
            yield ProposalPanel(id="confirm-panel", classes="hidden")
            # human mode: the person's action form, as in a run by hand (filled once the run
            # has its actions, shown while the mode is human)
            with Horizontal(id="human-panel", classes="" if self.agent.settings.mode == "human" else "hidden"):
                yield OptionList(id="palette", markup=False)
                yield Vertical(Static("Waiting for the run…", id="form-hint"), id="form-holder")
        yield KeysFooter()

    def _task_scripts(self) -> list[str]:
        """The task's solve scripts, which the Workspace tab opens first (a replay, whose
        task is not loaded, opens the workspace's first Python file)."""
        live = self.human or self.agent
        return list(live.task.solve) if live is not None else []

    def on_mount(self) -> None:
        self.title = f"labcoat · {self.run.meta.run_id}"
        self.steps = self.run.steps()
        self.query_one("#steps", StepList).add_rows([self._row(s) for s in self.steps])
        if has_tree(self.steps):
            self._add_tree_tab()
        self._refresh_status()
        self._show_summary()
        self.select(len(self.steps))
        if self.agent is not None:
            self.start_agent()
        if self.human is not None:
            self.query_one("#palette").focus()  # a person starts by choosing an action

    @staticmethod
    def _row(step: Step) -> StepRow:
        return StepRow(step.index, step.action, bool(step.error))

    def _refresh_status(self) -> None:
        """The status line, and the Pause button's label, from the session's actual state
        (a single step pauses by itself; an ended run has nothing to pause)."""
        paused = bool(self.agent and self.agent.paused)
        self.query_one("#status", StatusLine).show(self.run.meta, paused, self.busy)
        if self.agent is not None:
            ended = not self.is_live
            pause = self.query_one("#agent-pause", Button)
            pause.label = "Resume (space)" if paused and not ended else "Pause (space)"
            for button in self.query("#agent-controls Button").results(Button):
                button.disabled = ended
                button.display = not ended  # an ended run has nothing to pause, step or stop
            state = f"ended: {self.run.meta.status}" if ended else f"{self.agent.settings.mode} mode (m)"
            self.query_one("#agent-state", Static).update(Content(state))

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

    def action_side_tab(self, tab: str) -> None:
        """Show a side tab by key (under 120 columns the files take the step's place)."""
        self.query_one("#side", TabbedContent).active = tab
        if self.has_class("-narrow") and not self.has_class("-show-side"):
            self.action_toggle_side()

    # --- leaving and stopping ----------------------------------------------------------------
    async def action_back(self) -> None:
        """Escape: closes an open form first; leaving a live run asks, since it ends the run."""
        if await self._close_form():
            return
        if (self.agent is not None or self.human is not None) and self.is_live:
            self.action_stop(leave=True)
        else:
            self.app.pop_screen()

    async def _close_form(self) -> bool:
        """Close the form Escape was meant for (a rejection's reason, an edit of a proposal,
        an action by hand); False when none is open."""
        for holder_id in ("#confirm-form-holder", "#form-holder"):
            for holder in self.query(holder_id).results(Vertical):
                if holder.query("#action-form, #confirm-form, #reject-reason"):
                    await holder.remove_children()
                    if holder_id == "#form-holder":
                        await holder.mount(Static("Choose an action.", id="form-hint"))
                        self.query_one("#palette").focus()
                    return True
        return False

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

    def run_commands(self):
        """The palette's commands for this run (``LabcoatCommands`` asks the screen shown)."""
        if (self.agent is not None or self.human is not None) and self.is_live:
            yield "Run: stop this run", self.action_stop, "it ends interrupted (asks first)"
        if self.agent is not None and self.is_live:
            for mode, what in MODE_NOTES.items():
                yield f"Run: {mode} mode", lambda m=mode: self.set_mode(m), what
        for key, tab in (("tab-workspace", "Workspace"), ("tab-diff", "Diff"), ("tab-score", "Score")):
            yield f"Run: show the {tab} tab", lambda k=key: self.action_side_tab(k), "the files beside the step"

    # --- navigation ------------------------------------------------------------------------
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

    # --- live steps ------------------------------------------------------------------------
    def add_step(self, step: Step) -> None:
        self.steps.append(step)
        self.query_one("#steps", StepList).add_row(self._row(step))
        if not self.tree_tab and has_tree([step]):
            self._add_tree_tab()
        self._refresh_status()
        if self.follow:
            self.select(len(self.steps))

    def on_step_recorded(self, message: StepRecorded) -> None:
        self.busy = ""
        self.add_step(message.step)
        if self.hands is not None:  # done: back to choosing the next action
            self.query_one("#form-holder").loading = False
            self.query_one("#palette").focus()

    def show_score(self, message: RunScored) -> None:
        """The app scored a run (at its end, or asked for): refresh the Score tab if it is ours."""
        if message.run_path == self.run.path:
            self._show_summary()

    def _show_summary(self) -> None:
        """Refresh the Score tab where it is mounted (a score can land while the screen is
        still composing its tabs, or already closing)."""
        for summary in self.query("#run-summary").results(RunSummary):
            summary.show(self.run)

    @property
    def is_live(self) -> bool:
        return self.run.meta.status in ("created", "running")

    def on_run_ended(self, message: RunEnded) -> None:
        self._refresh_status()
        self._show_summary()
        meta = message.run.meta
        self.notify(visible(f"run {meta.status}: {meta.status_reason}"), markup=False,
                    severity="error" if meta.status == "error" else "information")
        if self.agent is not None:
            self._hide_confirm()
        self.refresh_bindings()  # Pause, Step, Stop and the mode no longer apply

    # --- human mode ------------------------------------------------------------------------
    @property
    def hands(self) -> HumanSession | AgentSession | None:
        """Who takes the person's actions by hand: a run by hand, or an agent run in human
        mode (``AgentSession.step``); None when the person has no form to fill."""
        if self.human is not None:
            return self.human
        if self.agent is not None and self.agent.settings.mode == "human":
            return self.agent
        return None

    def _model_only(self) -> list[Option]:
        """The agents' model-backed actions, listed (disabled) so a person knows they exist."""
        return [Option(f"{name} (needs a model)", id=f"model-{i}", disabled=True)
                for i, name in enumerate(MODEL_ACTIONS) if name not in self.hands.actions]

    def on_hands_wanted(self, message: HandsWanted) -> None:
        """Human mode: the run waits for the person's action; the form is theirs (the palette
        filled the first time, when the run's actions are known)."""
        if self.agent is None or self.agent.settings.mode != "human" or not self.is_live:
            return
        self.query_one("#human-panel").remove_class("hidden")
        palette = self.query_one("#palette", OptionList)
        if palette.option_count == 0:
            palette.add_options([*self.agent.actions, EDIT_FILE, *self._model_only()])
            self.query_one("#form-hint", Static).update("Your turn: choose an action (human mode).")
        self.query_one("#form-holder").loading = False
        self._refresh_status()
        if not self.query("#action-form"):
            palette.focus()

    @on(OptionList.OptionSelected, "#palette")
    async def _choose_action(self, event: OptionList.OptionSelected) -> None:
        await self.open_form(str(event.option.prompt))

    async def open_form(self, action: str) -> ActionForm | FileEditor:
        holder = self.query_one("#form-holder", Vertical)
        await holder.remove_children()
        if action == EDIT_FILE:
            form = FileEditor(self.run.workspace, self.hands.main_script() or "", id="action-form")
        else:
            form = ActionForm(self.hands.actions[action], self.hands.suggested(action),
                              id="action-form")
        await holder.mount(form)
        return form

    @on(ActionForm.Submitted)
    def _submit(self, event: ActionForm.Submitted) -> None:
        event.stop()
        if self.hands is not None and event.control.id == "action-form":
            self.human_step(event.action, event.args)
        elif self.agent is not None:
            self.agent.decide(self._edited(event.action, event.args))
            self._hide_confirm()

    def _edited(self, action: str, args: dict) -> Decision:
        """The verdict on an edit form: arguments that validate to what was proposed are an
        approval as is (saving an untouched form is not an edit by a person)."""
        proposal, spec = self.agent.pending, self._spec_for(action)
        if proposal is not None and spec is not None:
            try:
                if spec.validate(args) == spec.validate(proposal.args):
                    return Decision.approve()
            except Exception:  # noqa: BLE001 - a proposal that does not validate was edited
                pass
        return Decision.edit(args)

    @on(FileEditor.Saved)
    def _saved(self, event: FileEditor.Saved) -> None:
        event.stop()
        self.human_step("Write File", {"file_name": event.file_name, "content": event.content})

    def human_step(self, action: str, args: dict) -> None:
        """Run the person's action in a worker; the form holder shows it is busy meanwhile
        (an Execute Script can take minutes)."""
        self.query_one("#form-holder").loading = True
        self.busy = action
        self._refresh_status()
        self._human_step(action, args)

    @work(thread=True, exclusive=True, group="human")
    def _human_step(self, action: str, args: dict) -> None:
        try:
            self.hands.step(action, args)
        except Exception as err:  # noqa: BLE001 - shown to the person, the run stays open
            self.post_message(ActionFailed(f"{action} failed: {err}"))
            return
        if self.human is None:  # human mode: the agent's session reports the step and the end
            return
        step = self.human.env.last_step
        if step is not None:
            self.post_message(StepRecorded(step))
        if self.human.ended:  # a Final Answer, or a budget: drive ended the run
            self.post_message(RunEnded(self.run))

    def on_action_failed(self, message: ActionFailed) -> None:
        self.busy = ""
        self._refresh_status()
        self.query_one("#form-holder").loading = False
        self.notify(visible(message.error), severity="error", markup=False)

    # --- agent mode ------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="agent")
    def start_agent(self) -> None:
        agent = self.agent
        agent.on_step = lambda step: self.post_message(StepRecorded(step))
        agent.on_end_cb = lambda run: self.post_message(RunEnded(run))
        agent.on_proposal = lambda proposal: self.post_message(ProposalPending(proposal))
        agent.on_turn = lambda: self.post_message(HandsWanted())
        agent.on_help = lambda request: self.post_message(HelpRequested(request))
        agent.run_to_end()

    def action_toggle_pause(self) -> None:
        if self.agent is None:
            return
        if self.agent.paused:
            self.agent.resume()
        else:
            self.agent.pause()
        self._refresh_status()

    def action_single_step(self) -> None:
        if self.agent is not None:
            self.agent.step_once()

    @on(Button.Pressed, "#agent-pause")
    def _pause(self) -> None:
        self.action_toggle_pause()

    @on(Button.Pressed, "#agent-step")
    def _step(self) -> None:
        self.action_single_step()

    @on(Button.Pressed, "#agent-stop")
    def _stop(self) -> None:
        """Stopping (once confirmed) answers a waiting proposal too: it is not run, the run
        ends interrupted."""
        self.action_stop()

    def on_proposal_pending(self, message: ProposalPending) -> None:
        self.query_one("#confirm-panel", ProposalPanel).show(message.proposal, self.run.workspace)
        self._refresh_status()  # the run is running now (the line still said created)
        self.refresh_bindings()

    def on_help_requested(self, message: HelpRequested) -> None:
        """The agent's Request Help: the run waits until the person answers (or declines)."""
        from tui.screens.request_help import HelpAnswerScreen

        desk = self.agent.help_desk if self.agent is not None else None
        if desk is not None and desk.pending is not None:
            self.app.push_screen(HelpAnswerScreen(message.request), desk.answer)

    def _hide_confirm(self) -> None:
        self.query_one("#confirm-panel").add_class("hidden")
        self.query_one("#confirm-form-holder", Vertical).remove_children()
        self.refresh_bindings()

    async def action_decide(self, verdict: str) -> None:
        if verdict == "accept":
            self._accept()
        elif verdict == "always":
            self._always()
        elif verdict == "reject":
            await self._reject()
        else:
            await self._edit()

    def action_switch_mode(self) -> None:
        modes = list(MODES)
        self.set_mode(modes[(modes.index(self.agent.settings.mode) + 1) % len(modes)])

    def set_mode(self, mode: str) -> None:
        """Confirm, yolo or human from now on. A proposal already waiting still waits for its
        answer, except when the person takes over (human): it is then not run, and the action
        form is theirs until they switch back."""
        if self.agent is None or not self.is_live:
            return
        self.agent.set_mode(mode)
        if mode == "human":
            self._hide_confirm()
        else:
            self.query_one("#human-panel").add_class("hidden")
            self.call_later(self._close_form)
        self._refresh_status()
        self.refresh_bindings()
        self.notify(f"{mode} mode: " + MODE_NOTES[mode], markup=False)

    @on(Button.Pressed, "#confirm-accept")
    def _accept(self) -> None:
        self.agent.decide(Decision(accept=True))
        self._hide_confirm()

    @on(Button.Pressed, "#confirm-always")
    def _always(self) -> None:
        """Accept, and let this kind of action run unasked for the rest of the run."""
        proposal = self.agent.pending
        if proposal is None:
            return
        if proposal.action == FINAL_ANSWER:
            self.notify("the Final Answer always asks; accepted this once", markup=False)
        else:
            self.agent.allow(proposal.action)
            self.notify(visible(f"{proposal.action} now runs without asking"), markup=False)
        self._accept()

    @on(Button.Pressed, "#confirm-reject")
    async def _reject(self) -> None:
        """Ask why (optional): the reason is what the agent reads in its observation."""
        if self.agent.pending is None:
            return
        holder = self.query_one("#confirm-form-holder", Vertical)
        await holder.remove_children()
        reason = Input(placeholder="why (optional; the agent reads it) - Enter rejects, Escape goes back",
                       id="reject-reason")
        await holder.mount(reason)
        reason.focus()

    @on(Input.Submitted, "#reject-reason")
    def _rejected(self, event: Input.Submitted) -> None:
        event.stop()
        self.agent.decide(Decision.reject(event.value.strip()))
        self._hide_confirm()

    @on(Button.Pressed, "#confirm-edit")
    async def _edit(self) -> None:
        proposal = self.agent.pending
        if proposal is None:
            return
        spec = self._spec_for(proposal.action)
        if spec is None:
            self.notify(f"{proposal.action} is not an action of this run", severity="error")
            return
        holder = self.query_one("#confirm-form-holder", Vertical)
        await holder.remove_children()
        form = ActionForm(spec, id="confirm-form")
        await holder.mount(form)
        if isinstance(proposal.args, dict):
            for key, value in proposal.args.items():
                if key in spec.args_model.model_fields:
                    form.set_value(key, value)

    def _spec_for(self, action: str):
        env = getattr(self.agent.actor, "env", None)
        return env.lookup(action) if env is not None else None

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


def open_fork_by_hand(screen, run_path: Path, step: int) -> None:
    """In a worker of ``screen``: fork ``run_path`` at ``step`` as a person's run and push its
    live run view; a refusal (step out of range, snapshots missing) is a notice, never a crash."""
    from agent.config import ActorConfig
    from agent.fork import fork_run
    from tui.session import HumanActor, HumanSession

    try:
        parent = RunDir.open(run_path)
        fork, task = fork_run(parent, step, HumanActor(), config=ActorConfig(
            kind="human", seed=parent.meta.seed))
        session = HumanSession(fork, task)
    except Exception as err:  # noqa: BLE001 - shown to the person, the app stays up
        screen.app.call_from_thread(screen.notify, visible(f"cannot fork {Path(run_path).name} at step "
                                                           f"{step}: {err}"), severity="error", markup=False)
        return
    screen.app.call_from_thread(screen.app.push_screen, RunScreen(fork, human=session))
