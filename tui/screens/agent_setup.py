"""Choosing the model and budgets for an agent run, and whether to confirm each action."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, Switch

from agent.runner import Budgets


class AgentSetupScreen(ModalScreen):
    HELP_TITLE = "Agent run"
    HELP = """
Start an agent on the task: a model string as `labcoat run --model` takes it (openai/…,
anthropic/…, scripted/FILE, baseline/hparam for the no-LLM agent), budgets (blank: the
task's), and whether to confirm each action before it runs. Enter in any field starts.
"""
    BINDINGS = [("escape", "app.pop_screen", "Cancel")]

    def __init__(self, task: str, default_model: str = "baseline/hparam") -> None:
        super().__init__()
        self.task_ref = task
        self.default_model = default_model

    def compose(self) -> ComposeResult:
        with Vertical(id="agent-setup"):
            yield Static(Content.styled(f"Agent run on {self.task_ref}", "bold"))
            yield Label("model (provider/model)")
            yield Input(self.default_model, id="setup-model")  # focused first: Enter starts
            for name, hint in [("max-steps", "steps"), ("max-time", "seconds"),
                               ("max-tokens", "tokens"), ("max-cost", "US dollars")]:
                yield Label(f"{name} ({hint}, blank for the task's default)")
                yield Input("", id=f"setup-{name}")
            with Horizontal():
                yield Label("confirm each action ")
                yield Switch(False, id="setup-confirm")
            yield Static("", id="setup-error")
            with Horizontal():
                yield Button("Start", id="setup-start", variant="primary")
                yield Button("Cancel", id="setup-cancel")

    def budgets(self) -> Budgets:
        raw = {}
        for name in ("max-steps", "max-time", "max-tokens", "max-cost"):
            text = self.query_one(f"#setup-{name}", Input).value.strip()
            if text:
                raw[name.replace("-", "_")] = text
        return Budgets.model_validate(raw)

    @on(Button.Pressed, "#setup-cancel")
    def _cancel(self) -> None:
        self.app.pop_screen()

    @on(Input.Submitted)
    @on(Button.Pressed, "#setup-start")
    def _start(self) -> None:
        """Start (the button, or Enter in any field, as in any form)."""
        try:
            budgets = self.budgets()
        except ValueError as err:
            self.query_one("#setup-error", Static).update(Content.styled(str(err), "red"))
            return
        model = self.query_one("#setup-model", Input).value.strip()
        confirm = self.query_one("#setup-confirm", Switch).value
        self.app.pop_screen()
        self.app.start_agent(self.task_ref, model, budgets, confirm)
