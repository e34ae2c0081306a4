"""Editing a file by hand: a real editor opened on the file, saved as a Write File step.

A person changing three lines of a training script should not retype it into a form. The
editor loads the file from the live workspace; saving records an ordinary ``Write File``
step (so the trace, the snapshot and the Diff tab show exactly what changed).
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static, TextArea

from environments.untrusted.text import UNSAFE
from tui.widgets.proposal import current_text

#: the palette entry that opens the editor (not an action of the environment)
EDIT_FILE = "Edit a file (editor)"

LANGUAGES = {".py": "python", ".md": "markdown", ".json": "json", ".toml": "toml",
             ".sh": "bash", ".yaml": "yaml", ".yml": "yaml"}


class FileEditor(Vertical):
    """File name, Open, the editor (TextArea with syntax highlighting), Save (ctrl+s)."""

    BINDINGS = [Binding("ctrl+s", "save", "Save as Write File", id="editor.save")]

    class Saved(Message):
        """Save was asked for: write ``content`` to ``file_name`` as a step."""

        def __init__(self, file_name: str, content: str) -> None:
            super().__init__()
            self.file_name = file_name
            self.content = content

    def __init__(self, workspace: Path, file_name: str = "", **kw) -> None:
        super().__init__(**kw)
        self.workspace = workspace
        self.initial = file_name

    def compose(self) -> ComposeResult:
        with Horizontal(id="editor-bar"):
            yield Input(self.initial, placeholder="file to edit", id="editor-file")
            yield Button("Open", id="editor-open")
            yield Button("Save", id="editor-save", variant="primary")
        yield Static("", id="editor-note")
        yield TextArea.code_editor("", id="editor-text")

    def on_mount(self) -> None:
        if self.initial:
            self.open(self.initial)

    @property
    def file_name(self) -> str:
        return self.query_one("#editor-file", Input).value.strip()

    def open(self, rel: str) -> None:
        """Load ``rel`` (a new file starts empty) and move the cursor into the text.

        The file is read as the confirm view reads it (``current_text``: through the workspace's
        descriptor layer, never through a link, at most ``VIEW_BYTES``). What cannot be edited
        whole and safely is not loaded: a refused path, a binary or cut file, or text holding
        control characters (the editor would write them to the terminal as they are)."""
        note = self.query_one("#editor-note", Static)
        text, why = current_text(self.workspace, rel)
        if not why and UNSAFE.search(text.replace("\r", "")):
            why = f"{rel} holds control characters: read it in the Workspace tab (shown escaped)"
        if why:
            note.update(Content(f"{why} · not opened for editing"))
            return
        note.update(Content(f"{rel}: {len(text.splitlines())} lines · ctrl+s saves" if text
                            else f"{rel} is new or empty · ctrl+s saves"))
        editor = self.query_one("#editor-text", TextArea)
        editor.language = LANGUAGES.get(Path(rel).suffix) if Path(rel).suffix in LANGUAGES else None
        editor.load_text(text)
        editor.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.open(self.file_name)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "editor-open":
            self.open(self.file_name)
        elif event.button.id == "editor-save":
            self.action_save()

    def action_save(self) -> None:
        if not self.file_name:
            self.query_one("#editor-note", Static).update(Content("name the file to save"))
            return
        self.post_message(self.Saved(self.file_name, self.query_one("#editor-text", TextArea).text))
