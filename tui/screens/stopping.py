"""What the workbench shows while it stops live runs on the way out (`q` after asking).

Stopping waits for the step under way (a script can run for a while); until this screen, the
terminal went blank for those seconds, which reads as a hang.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from tui.terminal_text import visible


class StoppingScreen(Screen):
    """``stopping the run …`` for each run being stopped; the app exits when they have."""

    DEFAULT_CSS = """
    StoppingScreen { align: center middle; }
    #stopping { width: 64; max-width: 100%; height: auto; border: thick $warning; padding: 0 1; }
    """
    BINDINGS = []

    def __init__(self, run_ids: list[str]) -> None:
        super().__init__()
        self.run_ids = run_ids

    def compose(self) -> ComposeResult:
        runs = ("the run " if len(self.run_ids) == 1 else "the runs ") + ", ".join(self.run_ids)
        with Vertical(id="stopping"):
            yield Static(Content(visible(
                f"stopping {runs}… it ends interrupted (a step under way gets a few "
                "seconds), then labcoat quits. Resume or score it later from the Runs screen "
                "(u, c) or `labcoat score`.")), id="stopping-text")
