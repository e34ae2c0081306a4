"""The Run screen's actions by hand: the palette of actions, their forms (or the file
editor), and running the chosen action. A person's own run has them from the start; an
agent's run has them while it is in human mode."""

from __future__ import annotations

from collections.abc import Iterable

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import MountError
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

#: actions an agent's model performs (agent/llm_actions.py's registry); a person's run has none
from agent.llm_actions import MODEL_ACTIONS
from tui.messages import ActionFailed, RunEnded, StepRecorded
from tui.screens.run_base import RunScreenBase
from tui.session import AgentSession, HumanSession
from tui.terminal_text import visible
from tui.widgets.action_form import ActionForm
from tui.widgets.editor import EDIT_FILE, FileEditor


class HandsWanted(Message):
    """Human mode: the agent's run waits for the person's action (posted from its worker)."""


class ByHand(RunScreenBase):
    """The person's action forms, and the worker that runs what they submit."""

    @property
    def hands(self) -> HumanSession | AgentSession | None:
        """Who takes the person's actions by hand: a run by hand, or an agent run in human
        mode (``AgentSession.step``); None when the person has no form to fill."""
        if self.human is not None:
            return self.human
        if self.agent is not None and self.agent.settings.mode == "human":
            return self.agent
        return None

    def _compose_hand_panel(self, options: Iterable[str | Option], hint: str,
                            classes: str = "") -> ComposeResult:
        """The palette beside the form holder; an agent's run composes it empty (and hidden
        unless in human mode): its actions are known once the run has started."""
        with Horizontal(id="human-panel", classes=classes):
            yield OptionList(*options, id="palette", markup=False)
            yield Vertical(Static(hint, id="form-hint"), id="form-holder")

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

    async def _end_hands(self) -> None:
        """A run that has ended takes no more actions: the palette is disabled and an open
        form closed, saying so and how to go on (an action tried then would only fail)."""
        meta = self.run.meta
        for palette in self.query("#palette").results(OptionList):
            palette.disabled = True
            palette.display = False
        for panel in self.query("#human-panel"):
            panel.add_class("-ended")  # a line of text now, not a form's room
        for holder in self.query("#form-holder").results(Vertical):
            holder.loading = False
            try:
                await holder.remove_children()
                await holder.mount(Static(Content(visible(
                    f"The run has ended ({meta.status}): it takes no more actions. On the Runs "
                    "screen (r), u resumes it and K forks it.")), id="form-hint"))
            except MountError:  # the screen is closing (the app quits): nothing to say
                pass

    def on_action_failed(self, message: ActionFailed) -> None:
        self.busy = ""
        self._refresh_status()
        self.query_one("#form-holder").loading = False
        self.notify(visible(message.error), severity="error", markup=False)
