"""The actor protocol: anything that proposes actions for an Environment.

A replayed action list, the ReAct research agent, the no-LLM baseline, or a person at the TUI
all implement this, so one runner drives them all and their traces are alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from environments.actions import ActionSpec
from environments.environment import Environment
from environments.observation import Observation
from environments.runs import Step


class Proposal(BaseModel):
    """The next action an actor wants, with whatever reasoning it wants recorded."""

    action: str
    args: dict[str, Any] | str = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)


class ActorError(RuntimeError):
    """The actor cannot go on (a model that keeps failing); the run ends with status error."""


class StoppedWhileWaiting(KeyboardInterrupt):
    """Someone stopped the run while the actor waited on a person (a proposal, a verdict).

    ``drive`` checks for a stop only before asking the actor, and takes an actor that
    proposes nothing for one that finished; raised from ``propose``, this ends the run
    ``interrupted`` like Ctrl-C does (the session that stopped it then says why in its
    ``on_end``).
    """


@runtime_checkable
class Actor(Protocol):
    kind: str
    """Recorded as each step's ``actor`` (replay, agent, baseline, human)."""

    def extra_actions(self) -> Sequence[ActionSpec]:
        """Actions the actor brings (LLM-backed ones); most bring none."""
        ...

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        """Called once before the first proposal; ``history`` is non-empty on resume."""
        ...

    def propose(self, env: Environment) -> Proposal | None:
        """The next action, or None to stop without a Final Answer."""
        ...

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        """The result of the last proposal."""
        ...
