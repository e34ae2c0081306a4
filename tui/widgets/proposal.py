"""Confirm mode's view of a proposed action: exactly what will run, never reinterpreted.

A person approves what this shows, so it must be the actor's text character for character:
the header is a ``Content`` (no markup), and the body a :class:`CodeView` (plain lines,
highlighted by a lexer, never parsed as markup). A Write File or Append File proposal is
shown as the diff it would make to the file as it is now, which is what the person needs to
judge; anything else as its arguments (``args_text``). The body scrolls; the buttons that
answer it sit above it and stay on screen.

The file as it is now is read as the host (often root) from a workspace a sandboxed process
may have left links in, so it is read through :class:`sandbox.fs.WorkspaceFS`: a
symlink (the file, or a folder on the way), a FIFO or a device is named, never followed or
opened, and the action's refusal of it is what the view says; at most ``VIEW_BYTES`` of a
file are read, and a bigger one's size is said.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Static

from agent.actor import Proposal
from environments.acting.low_level import APPEND_FILE, WRITE_FILE
from sandbox.fs import WorkspaceError, WorkspaceFS, refuse_kind, split
from tui.terminal_text import visible
from tui.widgets.code_view import CodeView
from tui.widgets.step_detail import args_text
from tui.widgets.workspace import _text, file_diff

#: actions whose effect is a file's new content, computed from (current text, args)
FILE_EFFECTS = {
    WRITE_FILE: lambda current, args: args["content"],
    APPEND_FILE: lambda current, args: current + args["content"],
}


#: the most of the current file the view reads (the diff of a bigger one compares its start)
VIEW_BYTES = 256 << 10


def current_text(workspace: Path, rel: str) -> tuple[str, str]:
    """(the text of workspace file ``rel`` as it is now, a note for the person: "" when the
    file is an ordinary one read whole, or is new). Never follows a link, opens a FIFO, or
    reads more than ``VIEW_BYTES``; what stands in the way is named with the refusal the
    action itself gives."""
    fs = WorkspaceFS(workspace)
    try:
        parts = split(rel)
        for depth in range(1, len(parts)):  # a folder on the way that is a link, a file ...
            on_way = "/".join(parts[:depth])
            kind = fs.kind(on_way)
            if kind is None:
                return "", ""  # the folders are made, the file is new
            if kind != "dir":
                raise refuse_kind(on_way, kind, "a folder")
        kind = fs.kind(rel)
        if kind is None:
            return "", ""
        if kind != "file":
            raise refuse_kind(rel, kind, "a file; give a file name")
        data, size = fs.read(rel, VIEW_BYTES)
    except WorkspaceError as err:
        return "", (f"As the workspace is now, this action is refused: {err}. "
                    "Nothing it points to is read here.")
    text = _text(data)
    if text is None:
        return "", f"{rel} is a binary file ({size:,} bytes): the diff below starts from nothing."
    if size > len(data):
        return text, (f"{rel} is {size:,} bytes: the diff below compares only its first "
                      f"{len(data):,} bytes.")
    return text, ""


def proposal_body(proposal: Proposal, workspace: Path) -> tuple[str, str]:
    """(text, language) to show for ``proposal``: a diff for a file write, else its arguments."""
    args = proposal.args
    effect = FILE_EFFECTS.get(proposal.action)
    if effect is not None and isinstance(args, dict) and isinstance(args.get("file_name"), str) \
            and isinstance(args.get("content"), str):
        rel = args["file_name"]
        current, note = current_text(workspace, rel)
        diff = file_diff(rel, current, effect(current, args))
        if note:
            return f"{note}\n\n{diff or f'{rel}: no change'}", "text"
        return (diff, "diff") if diff else (f"{rel}: no change", "text")
    return args_text(args), "text"


def first_change(diff: str, context: int = 2) -> int:
    """The line a diff's view opens at: ``context`` lines above its first added or removed
    line, so what the person approves is in sight without scrolling (0 for no change)."""
    for i, line in enumerate(diff.split("\n")):
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            return max(0, i - context)
    return 0


def proposal_title(proposal: Proposal) -> Content:
    name = proposal.args.get("file_name") if isinstance(proposal.args, dict) else None
    target = f" {name}" if isinstance(name, str) else ""
    return Content.assemble(("Proposed: ", "bold"), visible(f"{proposal.action}{target}"))


class ProposalPanel(Vertical):
    """The waiting proposal, its Accept / Edit / Reject buttons, and the edit form's holder."""

    def compose(self) -> ComposeResult:
        yield Static("", id="confirm-proposal", markup=False)  # its own line: a long name fits
        with Horizontal(id="confirm-bar"):
            yield Button("Accept (y)", id="confirm-accept", variant="success")
            yield Button("Always (Y)", id="confirm-always")
            yield Button("Edit (e)", id="confirm-edit")
            yield Button("Reject (x)", id="confirm-reject", variant="error")
        yield CodeView("", id="confirm-body")
        yield Vertical(id="confirm-form-holder")

    def show(self, proposal: Proposal, workspace: Path) -> None:
        self.query_one("#confirm-proposal", Static).update(proposal_title(proposal))
        text, language = proposal_body(proposal, workspace)
        body = self.query_one("#confirm-body", CodeView)
        if language == "text":
            body.show_text(text)
        else:
            body.show_code(text, language, numbered=False)
        self.remove_class("hidden")
        # the panel was hidden, so its body has no size until the next layout: scroll then
        top = first_change(text) if language == "diff" else 0
        self.call_after_refresh(body.scroll_to, y=top, animate=False, force=True)
