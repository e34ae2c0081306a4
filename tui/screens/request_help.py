"""The agent's Request Help, shown to the person: its question, a line to answer in.

The run waits meanwhile (``environments.acting.help_request.PersonDesk``). Enter (or Send) answers;
Escape (or No answer) gives none, and the agent reads that nobody answered. Small enough for an
80×24 terminal, like :mod:`tui.screens.ask`; the question is the model's text, so it passes the
terminal sanitiser.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from tui.terminal_text import visible


class HelpAnswerScreen(ModalScreen[str | None]):
    """``request`` and an answer line; dismissed with the answer, or None for none."""

    DEFAULT_CSS = """
    HelpAnswerScreen { align: center middle; }
    #help-request-box { width: 76; max-width: 100%; height: auto; max-height: 90%;
                        border: thick $accent; padding: 0 1; background: $surface; }
    #help-request-text { height: auto; max-height: 12; margin-bottom: 1; }
    #help-request-box Horizontal { height: auto; }
    #help-request-box Button { margin-right: 1; }
    """
    BINDINGS = [Binding("escape", "decline", "No answer", id="help_request.decline")]

    def __init__(self, request: str) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="help-request-box"):
            yield Static("The agent asks for help:", classes="title")
            with VerticalScroll(id="help-request-text"):
                yield Static(Content(visible(self.request)), id="help-request-question")
            yield Input(placeholder="your answer (Enter sends)", id="help-answer")
            with Horizontal():
                yield Button("Send", id="help-send", variant="primary")
                yield Button("No answer (esc)", id="help-decline")

    def on_mount(self) -> None:
        self.query_one("#help-answer", Input).focus()

    @on(Input.Submitted, "#help-answer")
    @on(Button.Pressed, "#help-send")
    def _send(self) -> None:
        self.dismiss(self.query_one("#help-answer", Input).value)

    @on(Button.Pressed, "#help-decline")
    def action_decline(self) -> None:
        self.dismiss(None)
