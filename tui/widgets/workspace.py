"""The workspace at a step (from its snapshot), a file viewer, and the step's diff."""

from __future__ import annotations

import difflib
from pathlib import PurePosixPath

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Tree

from environments.record.runs import RunDir
from environments.record.snapshots import SnapshotError
from tui.terminal_text import safe_text
from tui.widgets.code_view import CodeView

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
    """Tree of the snapshot's files on the left, the selected file on the right.

    Tree labels are ``Text``: a str label is Rich markup to the Tree, and a file an agent
    named ``[bold]x.py`` must be listed as it is called.
    """

    def __init__(self, run: RunDir, scripts: list[str] | None = None, **kw) -> None:
        """``scripts``: the task's own scripts (its solve files), opened before anything else."""
        super().__init__(**kw)
        self.run = run
        self.scripts = list(scripts or [])
        self.index: int | None = None
        self.label = "00000"
        self.files: dict[str, str] | None = None  # path -> sha at ``label``
        self.opened: str | None = None
        self.shown: tuple[str, str] | None = None  # (path, sha) in the viewer

    def compose(self) -> ComposeResult:
        yield Tree("workspace", id="ws-tree")
        yield CodeView("Select a file.", id="ws-file")

    def show(self, index: int, open_first: list[str] | None = None) -> None:
        """The workspace at step ``index``, opening the first file the step changed.

        A step that changed no file keeps the open file, as it is at this step. Showing the
        step already shown does nothing (the tree and the viewer are left as the user set them).
        """
        if index == self.index:
            return
        self.index = index
        self.label = f"{index:05d}"
        try:
            files = {rel: e.sha for rel, e in self.run.snapshots.load(self.label).files.items()}
        except SnapshotError:
            files = {}
        if self.files is None or sorted(files) != sorted(self.files):
            self._build_tree(sorted(files))
        self.files = files
        changed = [rel for rel in (open_first or []) if rel in files]
        # what a person reads a workspace for is the script: a changed script, else the file
        # open, else the task's script; a changed data file (a submission) only failing those
        scripts = [rel for rel in changed if self._is_script(rel)]
        opened = self.opened if self.opened in files else None
        target = next(iter(scripts), None) or opened or self._main_script(files) or next(iter(changed), None)
        if target is not None:
            self.open_file(target)
        else:
            self.opened = self.shown = None
            self.query_one("#ws-file", CodeView).show_text("Select a file.")

    def _is_script(self, rel: str) -> bool:
        return rel in self.scripts or rel.endswith(".py")

    def _main_script(self, files: dict[str, str]) -> str | None:
        """The task's script where the snapshot has it, else its first Python file."""
        return next((rel for rel in [*self.scripts, *sorted(files)] if rel in files and self._is_script(rel)),
                    None)

    def _build_tree(self, files: list[str]) -> None:
        """Rebuilt only when the set of files changes (most steps only edit contents)."""
        tree = self.query_one("#ws-tree", Tree)
        tree.clear()
        nodes = {"": tree.root}
        for rel in files:
            parts = rel.split("/")
            for depth in range(1, len(parts)):
                key = "/".join(parts[:depth])
                if key not in nodes:
                    nodes[key] = nodes["/".join(parts[: depth - 1])].add(safe_text(parts[depth - 1] + "/"),
                                                                          expand=True)
            nodes["/".join(parts[:-1])].add_leaf(safe_text(parts[-1]), data=rel)
        tree.root.expand()

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        rel = event.node.data
        if rel:
            self.open_file(rel)

    def open_file(self, rel: str) -> None:
        """Show ``rel`` at the current step; the same content already shown is not redrawn."""
        self.opened = rel
        key = (rel, (self.files or {}).get(rel, ""))
        if key == self.shown:
            return
        same_file = self.shown is not None and self.shown[0] == rel
        self.shown = key
        view = self.query_one("#ws-file", CodeView)
        try:
            text = _text(self.run.snapshots.read(self.label, rel))
        except (KeyError, OSError, SnapshotError) as err:
            self.shown = None
            view.show_text(f"cannot open {rel}: {err}")
            return
        if text is None:
            view.show_text(f"{rel}: binary file")
        else:
            view.show_code(text, _lexer(rel), keep_scroll=same_file)


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
        chunks.append(file_diff(rel, texts[0], texts[1]))
    return "".join(chunks)


def file_diff(rel: str, before: str, after: str) -> str:
    """Unified diff of one file's two versions (a step's, or a proposal's against the file)."""
    def lines(text: str) -> list[str]:  # a last line without "\n" would run into the next
        return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(True)]

    return "".join(difflib.unified_diff(lines(before), lines(after), f"a/{rel}", f"b/{rel}"))


class DiffView(CodeView):
    """What one step changed, as a unified diff, its long lines folded (a changed value at
    the end of a line stays in sight in a narrow pane).

    The Run screen calls ``show`` only while the Diff tab is the one shown (and again when
    it is activated): reading two snapshots and diffing them is wasted on a hidden tab.
    """

    WRAP = True

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.index: int | None = None

    def show(self, run: RunDir, index: int, changed: list[str]) -> None:
        """The diff of step ``index``; nothing to do when that step's diff is shown already."""
        if index == self.index:
            return
        self.index = index
        diff = step_diff(run, index, changed)
        if diff:
            self.show_code(diff, "diff", numbered=False)
        else:
            self.show_text("This step changed no file.")
