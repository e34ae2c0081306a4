"""The Run screen's answers to an agent's proposal in confirm mode: accept, always allow,
edit in a form, or reject with a reason the agent reads."""

from __future__ import annotations

from textual import on
from textual.containers import Vertical
from textual.widgets import Button, Input

from agent.approval import FINAL_ANSWER
from tui.messages import ProposalPending
from tui.screens.run_base import RunScreenBase
from tui.session import Decision
from tui.terminal_text import visible
from tui.widgets.action_form import ActionForm
from tui.widgets.proposal import ProposalPanel


class ConfirmProposals(RunScreenBase):
    """The proposal panel, shown while a proposal waits, and the verdicts given on it."""

    def on_proposal_pending(self, message: ProposalPending) -> None:
        self.query_one("#confirm-panel", ProposalPanel).show(message.proposal, self.run.workspace)
        self._refresh_status()  # the run is running now (the line still said created)
        self.refresh_bindings()

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

    def _spec_for(self, action: str):
        env = getattr(self.agent.actor, "env", None)
        return env.lookup(action) if env is not None else None
