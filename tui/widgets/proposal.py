"""Confirm mode's view of a proposed action: exactly what will run, never reinterpreted.

A person approves what this shows, so it must be the actor's text character for character:
the header is a ``Content`` (no markup), and the body a :class:`CodeView` (plain lines,
highlighted by a lexer, never parsed as markup). A Write File or Append File proposal is
shown as the diff it would make to the file as it is now, which is what the person needs to
judge; anything else as its arguments (``args_text``). The body scrolls; the buttons that
answer it sit above it and stay on screen.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Static

from agent.actor import Proposal
from tui.widgets.code_view import CodeView
from tui.widgets.step_detail import args_text
from tui.widgets.workspace import _text, file_diff

#: actions whose effect is a file's new content, computed from (current text, args)
FILE_EFFECTS = {
    "Write File": lambda current, args: args["content"],
    "Append File": lambda current, args: current + args["content"],
}


def proposal_body(proposal: Proposal, workspace: Path) -> tuple[str, str]:
    """(text, language) to show for ``proposal``: a diff for a file write, else its arguments."""
    args = proposal.args
    effect = FILE_EFFECTS.get(proposal.action)
    if effect is not None and isinstance(args, dict) and isinstance(args.get("file_name"), str) \
            and isinstance(args.get("content"), str):
        rel = args["file_name"]
        path = workspace / rel
        try:
            current = (_text(path.read_bytes()) or "") if path.is_file() else ""
        except OSError:
            current = ""
        diff = file_diff(rel, current, effect(current, args))
        return (diff, "diff") if diff else (f"{rel}: no change", "text")
    return args_text(args), "text"


def proposal_title(proposal: Proposal) -> Content:
    name = proposal.args.get("file_name") if isinstance(proposal.args, dict) else None
    target = f" {name}" if isinstance(name, str) else ""
    return Content.assemble(("Proposed: ", "bold"), f"{proposal.action}{target}")


class ProposalPanel(Vertical):
    """The waiting proposal, its Accept / Edit / Reject buttons, and the edit form's holder."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="confirm-bar"):
            yield Static("", id="confirm-proposal", markup=False)
            yield Button("Accept (y)", id="confirm-accept", variant="success")
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
