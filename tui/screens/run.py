"""The Run screen: step list, step detail, workspace and diff; live for human and agent runs."""

from __future__ import annotations

import json

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import (
    Button,
    Header,
    OptionList,
    Static,
    TabbedContent,
    TabPane,
)

from environments.runs import RunDir, Step
from tui.messages import ProposalPending, RunEnded, StepRecorded
from tui.session import AgentSession, Decision, HumanSession
from tui.widgets.action_form import ActionForm
from tui.widgets.footer import KeysFooter
from tui.widgets.status_line import StatusLine
from tui.widgets.step_detail import StepDetail
from tui.widgets.step_list import StepList, StepRow
from tui.widgets.workspace import DiffView, WorkspaceView


class RunScreen(Screen):
    """A run, finished (replay) or live (a person's or an agent's)."""

    BINDINGS = [
        Binding("h", "prev_step", "Prev step", id="run.prev_step"),
        Binding("l", "next_step", "Next step", id="run.next_step"),
        Binding("g", "first_step", "First", id="run.first_step"),
        Binding("G", "last_step", "Last", id="run.last_step"),
        Binding("j", "scroll_detail(1)", "Scroll down", show=False, id="run.scroll_down"),
        Binding("k", "scroll_detail(-1)", "Scroll up", show=False, id="run.scroll_up"),
        Binding("space", "toggle_pause", "Pause/resume", id="run.toggle_pause"),
        Binding("n", "single_step", "Single step", id="run.single_step"),
        Binding("f", "fold_reasoning", "Fold", id="run.fold_reasoning"),
        Binding("escape", "app.pop_screen", "Back", id="run.back"),
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

    def compose(self) -> ComposeResult:
        yield Header()
        yield StatusLine(id="status")
        with Horizontal(id="run-main"):
            yield StepList(id="steps")
            yield StepDetail(id="detail")
            with TabbedContent(id="side"):
                with TabPane("Workspace", id="tab-workspace"):
                    yield WorkspaceView(self.run, id="workspace")
                with TabPane("Diff", id="tab-diff"):
                    yield DiffView(id="diff")
        if self.human is not None:
            with Horizontal(id="human-panel"):
                yield OptionList(*self.human.actions, id="palette")
                yield Vertical(Static("Choose an action.", id="form-hint"), id="form-holder")
        if self.agent is not None:
            with Horizontal(id="agent-controls"):
                yield Button("Pause", id="agent-pause")
                yield Button("Step", id="agent-step")
                yield Button("Stop", id="agent-stop", variant="error")
                yield Static("", id="agent-state")
            with Vertical(id="confirm-panel", classes="hidden"):
                yield Static("", id="confirm-proposal")
                with Horizontal():
                    yield Button("Accept", id="confirm-accept", variant="success")
                    yield Button("Edit", id="confirm-edit")
                    yield Button("Reject", id="confirm-reject", variant="error")
                yield Vertical(id="confirm-form-holder")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.title = f"labcoat · {self.run.meta.run_id}"
        self.steps = self.run.steps()
        self.query_one("#steps", StepList).add_rows([self._row(s) for s in self.steps])
        self._refresh_status()
        self.select(len(self.steps))
        if self.agent is not None:
            self.start_agent()

    @staticmethod
    def _row(step: Step) -> StepRow:
        return StepRow(step.index, step.action, bool(step.error))

    def _refresh_status(self) -> None:
        paused = bool(self.agent and self.agent.paused)
        self.query_one("#status", StatusLine).show(self.run.meta, paused)

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
        if self.query_one("#side", TabbedContent).active == "tab-diff":
            self.query_one("#diff", DiffView).show(self.run, self.current, changed)
        else:
            self.query_one("#workspace", WorkspaceView).show(self.current, changed)

    @on(TabbedContent.TabActivated, "#side")
    def _side_tab_activated(self) -> None:
        self._show_side()

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

    def action_fold_reasoning(self) -> None:
        self.query_one("#detail", StepDetail).toggle_reasoning()

    def action_scroll_detail(self, direction: int) -> None:
        detail = self.query_one("#detail", StepDetail)
        detail.scroll_relative(y=3 * direction, animate=False)

    # --- live steps ------------------------------------------------------------------------
    def add_step(self, step: Step) -> None:
        self.steps.append(step)
        self.query_one("#steps", StepList).add_row(self._row(step))
        self._refresh_status()
        if self.follow:
            self.select(len(self.steps))

    def on_step_recorded(self, message: StepRecorded) -> None:
        self.add_step(message.step)

    def on_run_ended(self, message: RunEnded) -> None:
        self._refresh_status()
        self.notify(f"run {message.run.meta.status}: {message.run.meta.status_reason}")
        if self.agent is not None:
            self.query_one("#agent-state", Static).update(f"ended: {message.run.meta.status}")

    # --- human mode ------------------------------------------------------------------------
    @on(OptionList.OptionSelected, "#palette")
    async def _choose_action(self, event: OptionList.OptionSelected) -> None:
        await self.open_form(str(event.option.prompt))

    async def open_form(self, action: str) -> ActionForm:
        holder = self.query_one("#form-holder", Vertical)
        await holder.remove_children()
        form = ActionForm(self.human.actions[action], id="action-form")
        await holder.mount(form)
        return form

    @on(ActionForm.Submitted)
    def _submit(self, event: ActionForm.Submitted) -> None:
        event.stop()
        if self.human is not None and event.control.id == "action-form":
            self.human_step(event.action, event.args)
        elif self.agent is not None:
            self.agent.decide(Decision(accept=True, args=event.args))
            self._hide_confirm()

    @work(thread=True, exclusive=True, group="human")
    def human_step(self, action: str, args: dict) -> None:
        self.human.step(action, args)
        step = self.human.env.last_step
        if step is not None:
            self.post_message(StepRecorded(step))
        if self.human.env.done:
            self.post_message(RunEnded(self.run))

    # --- agent mode ------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="agent")
    def start_agent(self) -> None:
        agent = self.agent
        agent.on_step = lambda step: self.post_message(StepRecorded(step))
        agent.on_end_cb = lambda run: self.post_message(RunEnded(run))
        agent.on_proposal = lambda proposal: self.post_message(ProposalPending(proposal))
        agent.run_to_end()

    def action_toggle_pause(self) -> None:
        if self.agent is None:
            return
        if self.agent.paused:
            self.agent.resume()
        else:
            self.agent.pause()
        self.query_one("#agent-pause", Button).label = "Resume" if self.agent.paused else "Pause"
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
        self.agent.stop()

    def on_proposal_pending(self, message: ProposalPending) -> None:
        panel = self.query_one("#confirm-panel")
        panel.remove_class("hidden")
        args = message.proposal.args
        shown = args if isinstance(args, str) else json.dumps(args, indent=2)
        self.query_one("#confirm-proposal", Static).update(
            f"[b]Proposed:[/b] {message.proposal.action}\n{shown}")

    def _hide_confirm(self) -> None:
        self.query_one("#confirm-panel").add_class("hidden")
        self.query_one("#confirm-form-holder", Vertical).remove_children()

    @on(Button.Pressed, "#confirm-accept")
    def _accept(self) -> None:
        self.agent.decide(Decision(accept=True))
        self._hide_confirm()

    @on(Button.Pressed, "#confirm-reject")
    def _reject(self) -> None:
        self.agent.decide(Decision(accept=False, reason="rejected in the TUI"))
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
        if self.agent is not None:
            self.agent.stop()
        if self.human is not None:
            self.human.close()
