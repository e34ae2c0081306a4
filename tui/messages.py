"""Typed messages that workers post to the UI thread."""

from __future__ import annotations

from textual.message import Message

from agent.actor import Proposal
from environments.record.runs import RunDir, Step


class StepRecorded(Message):
    """A step was appended to the run's trace."""

    def __init__(self, step: Step) -> None:
        super().__init__()
        self.step = step


class RunEnded(Message):
    def __init__(self, run: RunDir) -> None:
        super().__init__()
        self.run = run


class RunScored(Message):
    """A run was scored (``error``: why it could not be)."""

    def __init__(self, run_path, line: str, error: bool = False) -> None:
        super().__init__()
        self.run_path = run_path
        self.line = line
        self.error = error


class ProposalPending(Message):
    """Confirm mode: the agent proposed an action that waits for the person."""

    def __init__(self, proposal: Proposal) -> None:
        super().__init__()
        self.proposal = proposal


class HelpRequested(Message):
    """The agent's Request Help: ``request`` waits for the person's answer."""

    def __init__(self, request: str) -> None:
        super().__init__()
        self.request = request


class ActionFailed(Message):
    """Starting or running something failed before any step (a bad task, a bad model)."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
