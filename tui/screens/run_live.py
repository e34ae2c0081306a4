"""The Run screen's live agent: running it in a worker, pause, single step, the confirm
modes, and its Request Help. Stopping is the screen's own (a person's run stops too)."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Button, Static

from agent.approval import MODES
from tui.messages import HelpRequested, ProposalPending, RunEnded, StepRecorded
from tui.screens.run_confirm import ConfirmProposals
from tui.screens.run_hand import HandsWanted
from tui.widgets.proposal import ProposalPanel

#: what each confirm mode does, said when it is switched on (key `m`, the palette)
MODE_NOTES = {"confirm": "each proposed action waits for you", "yolo": "actions run unasked, the Final Answer too",
              "human": "you act by hand; the model is not asked"}


class LiveAgent(ConfirmProposals):
    """The agent's controls; built on the proposal answers, since a mode switch takes a
    waiting proposal away."""

    def _compose_agent_controls(self) -> ComposeResult:
        with Horizontal(id="agent-controls"):
            # the buttons name their keys, so the footer keeps room for the app's
            yield Button("Pause (space)", id="agent-pause")
            yield Button("Step (n)", id="agent-step")
            yield Button("Stop (S)", id="agent-stop", variant="error")
            yield Static("", id="agent-state")
        yield ProposalPanel(id="confirm-panel", classes="hidden")

    @work(thread=True, exclusive=True, group="agent")
    def start_agent(self) -> None:
        agent = self.agent
        agent.on_step = lambda step: self.post_message(StepRecorded(step))
        agent.on_end_cb = lambda run: self.post_message(RunEnded(run))
        agent.on_proposal = lambda proposal: self.post_message(ProposalPending(proposal))
        agent.on_turn = lambda: self.post_message(HandsWanted())
        agent.on_help = lambda request: self.post_message(HelpRequested(request))
        agent.run_to_end()

    def _refresh_status(self) -> None:
        """The Pause button's label follows the session's actual state too (a single step
        pauses by itself; an ended run has nothing to pause)."""
        super()._refresh_status()
        if self.agent is None:
            return
        paused = self.agent.paused
        ended = not self.is_live
        pause = self.query_one("#agent-pause", Button)
        pause.label = "Resume (space)" if paused and not ended else "Pause (space)"
        for button in self.query("#agent-controls Button").results(Button):
            button.disabled = ended
            button.display = not ended  # an ended run has nothing to pause, step or stop
        state = f"ended: {self.run.meta.status}" if ended else f"{self.agent.settings.mode} mode (m)"
        self.query_one("#agent-state", Static).update(Content(state))

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

    def on_help_requested(self, message: HelpRequested) -> None:
        """The agent's Request Help: the run waits until the person answers (or declines)."""
        from tui.screens.request_help import HelpAnswerScreen

        desk = self.agent.help_desk if self.agent is not None else None
        if desk is not None and desk.pending is not None:
            self.app.push_screen(HelpAnswerScreen(message.request), desk.answer)
