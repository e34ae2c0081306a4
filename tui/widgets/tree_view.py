"""A tree run's solution tree: every node (kind, parent, metric, status) and its code or diff.

The tree comes from the trace alone (:func:`agent.tree.view.tree_of`, the agent's own
rebuild), so a finished run, a live one and a resumed one are drawn alike. Selecting a node
shows its script; ``d`` switches to its diff against its parent (a draft's against the
starting script), which is how a person sees what one improvement or fix actually changed.
Labels are ``Text``: node plans and errors are the model's and the script's words, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from agent.tree.nodes import Node
from agent.tree.prompts import last_line
from agent.tree.view import RunTree, tree_of
from environments.record.runs import RunDir, Step
from environments.record.snapshots import SnapshotError
from environments.untrusted.words import metric as metric_text
from tui.terminal_text import visible
from tui.widgets.code_view import CodeView
from tui.widgets.workspace import file_diff

STARTING = "00000"  # the snapshot of the workspace before any step


def node_label(node: Node, metric: str, best: int | None) -> Text:
    """``#3 debug of #1 · accuracy 0.874 ★``: what a node is, where it came from, how it did."""
    label = Text(f"#{node.id} {node.kind}")
    if node.parent is not None:
        label.append(f" of #{node.parent}")
    if node.status == "good" and node.metric is not None:
        label.append(visible(f" · {metric} {metric_text(node.metric)}"), style="green")
        if node.metric_source == "output":
            label.append(" (printed)", style="dim")
    elif node.status == "buggy":
        label.append(visible(f" · failed: {last_line(node.error)[:60]}"), style="red")
    else:
        label.append(" · not run", style="dim")
    if node.id == best:
        label.append(" ★ best", style="bold")
    return label


class TreeView(Vertical):
    """The run's nodes as a tree on top, the selected node's code (or diff) below."""

    BINDINGS = [Binding("d", "toggle_diff", "Code/diff", id="tree.toggle_diff")]

    def __init__(self, run: RunDir, metric: str = "", higher_is_better: bool = True, **kw) -> None:
        super().__init__(**kw)
        self.run = run
        self.metric = metric
        self.higher_is_better = higher_is_better
        self.solution: RunTree | None = None
        self.seen = -1  # how many steps the tree was built from
        self.selected: int | None = None
        self.mode = "code"  # code | diff
        self._starting: str | None = None

    def compose(self) -> ComposeResult:
        tree: Tree[int] = Tree("solution tree", id="tree-nodes")
        tree.show_root = False
        yield tree
        yield Static("", id="tree-caption", markup=False)
        yield CodeView("Select a node.", id="tree-code")

    # --- the tree ---------------------------------------------------------------------------
    def show(self, steps: Sequence[Step], node: int | None = None) -> None:
        """The tree of ``steps`` (rebuilt only when steps were added), with ``node`` (the
        current step's) selected when given."""
        if len(steps) != self.seen:
            self.seen = len(steps)
            self.solution = tree_of(steps, self.metric, self.higher_is_better)
            self._draw()
        if node is not None and self.solution is not None and node in self._ids():
            self.open_node(node)
            self._move_cursor(node)

    def _ids(self) -> set[int]:
        return {n.id for n in self.solution.journal.nodes} if self.solution else set()

    def _draw(self) -> None:
        widget = self.query_one("#tree-nodes", Tree)
        widget.clear()
        assert self.solution is not None

        def add(parent: TreeNode[int], node: Node) -> None:
            label = node_label(node, self.metric, self.solution.best)
            kids = self.solution.children(node.id)
            if kids:
                branch = parent.add(label, data=node.id, expand=True)
                for child in kids:
                    add(branch, child)
            else:
                parent.add_leaf(label, data=node.id)

        for root in self.solution.roots():
            add(widget.root, root)
        widget.root.expand()
        if self.selected in self._ids():
            self.open_node(self.selected, force=True)
            self._move_cursor(self.selected)
        elif not self._ids():
            self.query_one("#tree-caption", Static).update("No node has run yet.")

    def _move_cursor(self, node_id: int) -> None:
        widget = self.query_one("#tree-nodes", Tree)
        found = self._find(widget.root, node_id)
        if found is not None:  # after the refresh: a node has no line until the tree is laid out
            widget.call_after_refresh(widget.move_cursor, found)

    def _find(self, at: TreeNode[int], node_id: int) -> TreeNode[int] | None:
        for child in at.children:
            if child.data == node_id:
                return child
            if (hit := self._find(child, node_id)) is not None:
                return hit
        return None

    def labels(self) -> list[str]:
        """Every node's label, depth-first with two spaces a level (for tests and copying)."""
        out: list[str] = []

        def walk(at: TreeNode[int], depth: int) -> None:
            for child in at.children:
                out.append("  " * depth + str(child.label))
                walk(child, depth + 1)

        walk(self.query_one("#tree-nodes", Tree).root, 0)
        return out

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        """A person moving the cursor opens each node in turn; the tree's own cursor moves
        (a rebuild puts it on the first line) are not a choice, so they open nothing."""
        event.stop()
        if event.node.data is not None and event.control.has_focus:
            self.open_node(event.node.data)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.data is not None:
            self.open_node(event.node.data)

    # --- the code panel -----------------------------------------------------------------------
    def open_node(self, node_id: int, *, force: bool = False) -> None:
        """Show node ``node_id``'s script, or its diff (``mode``); nothing when it is shown."""
        if node_id == self.selected and not force:
            return
        self.selected = node_id
        self._render_code()

    def action_toggle_diff(self) -> None:
        self.mode = "diff" if self.mode == "code" else "code"
        self._render_code()

    def _render_code(self) -> None:
        view = self.query_one("#tree-code", CodeView)
        caption = self.query_one("#tree-caption", Static)
        if self.solution is None or self.selected not in self._ids():
            return
        node = self.solution.journal.get(self.selected)
        script = self.solution.script or "script"
        if self.mode == "code":
            caption.update(Content(f"node {node.id}: {script} (d: diff against its parent)"))
            view.show_code(node.code, "python")
            return
        if node.parent is not None:
            base, against = self.solution.journal.get(node.parent).code, f"node {node.parent}"
        else:
            base, against = self.starting_code(), "the starting script"
        caption.update(Content(f"node {node.id}: diff against {against} (d: code)"))
        diff = file_diff(script, base, node.code)
        if diff:
            view.show_code(diff, "diff", numbered=False)
        else:
            view.show_text(f"Node {node.id}'s script is the same as {against}'s.")

    def starting_code(self) -> str:
        """The solve script as the run started (its first snapshot); empty if it had none."""
        if self._starting is None:
            try:
                data = self.run.snapshots.read(STARTING, self.solution.script) if self.solution else b""
                self._starting = data.decode("utf-8", "replace")
            except (KeyError, OSError, SnapshotError):
                self._starting = ""
        return self._starting
