"""The workspace at a step (from its snapshot), a file viewer, and the step's diff."""

from __future__ import annotations

import difflib
from pathlib import PurePosixPath

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static, Tree

from environments.runs import RunDir
from environments.snapshots import SnapshotError

MAX_VIEW = 200_000


def _lexer(path: str) -> str:
    return {".py": "python", ".md": "markdown", ".json": "json", ".toml": "toml", ".sh": "bash",
            ".csv": "text", ".txt": "text", ".yaml": "yaml", ".yml": "yaml"}.get(
        PurePosixPath(path).suffix, "text")


def _text(data: bytes) -> str | None:
    if b"\x00" in data[:4096]:
        return None
    return data[:MAX_VIEW].decode("utf-8", "replace")


class WorkspaceView(Horizontal):
    """Tree of the snapshot's files on the left, the selected file on the right."""

    def __init__(self, run: RunDir, **kw) -> None:
        super().__init__(**kw)
        self.run = run
        self.label = "00000"
        self.files: list[str] | None = None

    def compose(self) -> ComposeResult:
        yield Tree("workspace", id="ws-tree")
        with VerticalScroll(id="ws-file"):
            yield Static("Select a file.", id="ws-content")

    def show(self, index: int, open_first: list[str] | None = None) -> None:
        """The workspace at step ``index``; opens the first of ``open_first`` (what it changed)."""
        self.label = f"{index:05d}"
        try:
            files = sorted(self.run.snapshots.load(self.label).files)
        except SnapshotError:
            files = []
        if files != self.files:
            self._build_tree(files)
        shown = [rel for rel in (open_first or []) if rel in files]
        if shown:
            self.open_file(shown[0])
        else:
            self.query_one("#ws-content", Static).update("Select a file.")

    def _build_tree(self, files: list[str]) -> None:
        """Rebuilt only when the set of files changes (most steps only edit contents)."""
        self.files = files
        tree = self.query_one("#ws-tree", Tree)
        tree.clear()
        nodes = {"": tree.root}
        for rel in files:
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                key = "/".join(parts[:depth])
                if key not in nodes:
                    nodes[key] = nodes["/".join(parts[: depth - 1])].add(parts[depth - 1] + "/", expand=True)
            nodes["/".join(parts[:-1])].add_leaf(parts[-1], data=rel)
        tree.root.expand()

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        rel = event.node.data
        if rel:
            self.open_file(rel)

    def open_file(self, rel: str) -> None:
        content = self.query_one("#ws-content", Static)
        try:
            text = _text(self.run.snapshots.read(self.label, rel))
        except (KeyError, OSError, SnapshotError) as err:
            content.update(f"cannot open {rel}: {err}")
            return
        if text is None:
            content.update(f"{rel}: binary file")
        else:
            content.update(Syntax(text, _lexer(rel), line_numbers=True, word_wrap=False))


def step_diff(run: RunDir, index: int, changed: list[str]) -> str:
    """Unified diff of what step ``index`` changed (text files; binaries are named)."""
    if index < 1:
        return ""
    before, after = f"{index - 1:05d}", f"{index:05d}"
    chunks = []
    for rel in changed:
        texts = []
        for label in (before, after):
            try:
                texts.append(_text(run.snapshots.read(label, rel)) or "")
            except (KeyError, OSError, SnapshotError):
                texts.append("")
        chunks.extend(difflib.unified_diff(texts[0].splitlines(True), texts[1].splitlines(True),
                                           f"a/{rel}", f"b/{rel}"))
    return "".join(chunks)


class DiffView(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Static("", id="diff-content")

    def show(self, run: RunDir, index: int, changed: list[str]) -> None:
        diff = step_diff(run, index, changed)
        content = self.query_one("#diff-content", Static)
        content.update(Syntax(diff, "diff") if diff else "This step changed no file.")
