"""A yes/no question before anything that cannot be undone (ending a run, starting one).

Small enough for an 80×24 terminal; `y`/Enter on the first button says yes, `n`/Escape no,
so Escape pressed twice never does more than it did once.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.terminal_text import visible


class AskScreen(ModalScreen[bool]):
    """``question`` with a ``yes`` button (focused) and a ``no`` one; dismissed with the answer."""

    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    #ask { width: 64; max-width: 100%; height: auto; border: thick $warning; padding: 0 1;
           background: $surface; }
    #ask-question { margin-bottom: 1; }
    #ask Horizontal { height: auto; }
    #ask Button { margin-right: 1; }
    """
    BINDINGS = [Binding("escape,n", "answer(False)", "No", id="ask.no"),
                Binding("y", "answer(True)", "Yes", id="ask.yes")]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No", danger: bool = True) -> None:
        super().__init__()
        self.question, self.yes, self.no, self.danger = question, yes, no, danger

    def compose(self) -> ComposeResult:
        with Vertical(id="ask"):
            yield Static(Content(visible(self.question)), id="ask-question")
            with Horizontal():
                yield Button(f"{self.yes} (y)", id="ask-yes", variant="error" if self.danger else "primary")
                yield Button(f"{self.no} (n)", id="ask-no")

    def on_mount(self) -> None:
        self.query_one("#ask-no", Button).focus()  # Enter alone never does the destructive thing

    @on(Button.Pressed, "#ask-yes")
    def _yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#ask-no")
    def _no(self) -> None:
        self.dismiss(False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
