"""F1 / ``?``: labcoat's own help for the screen below: what it is for, and its keys.

Textual's key panel lists bindings by their terse descriptions and says nothing about what a
screen is for; each labcoat screen has a ``HELP`` text, and the keys come from its bindings
(the ones that apply now, so a person's run does not list agent keys).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Markdown

GENERAL = ("**Everywhere:** `t` tasks · `r` runs · `s` scores · `ctrl+p` commands · "
           "`F1`/`?` this help · `q` quit")


def _md(text: str) -> str:
    """Key names and descriptions are ours, but keep Markdown from reading them as syntax."""
    return text.replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def help_markdown(screen: Screen) -> str:
    title = getattr(screen, "HELP_TITLE", type(screen).__name__)
    lines = [f"# {title}", "", getattr(screen, "HELP", "").strip(), "", "| key | does |", "|---|---|"]
    for key, (_node, binding, enabled, _tip) in screen.active_bindings.items():
        if enabled and binding.description and key not in ("f1", "question_mark"):
            lines.append(f"| `{screen.app.get_key_display(binding)}` | {_md(binding.description)} |")
    return "\n".join([*lines, "", GENERAL])


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,f1,question_mark,q", "dismiss", "Close", id="help.close")]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Markdown(self.markdown, id="help-text")
