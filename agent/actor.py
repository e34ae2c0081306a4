"""The actor protocol: anything that proposes actions for an Environment.

A replayed action list, the ReAct research agent, the no-LLM baseline, or a person at the TUI
all implement this, so one runner drives them all and their traces are alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment
from environments.acting.observation import Observation
from environments.record.runs import RunDir, Step

#: what an actor is told when a reviewer rejects its proposal (then the reason, if any); here,
#: beside the protocol, because actors read it (nothing was run) and the reviewer writes it
REJECTED = "The human reviewer rejected this action; it was not run."

class Proposal(BaseModel):
    """The next action an actor wants, with whatever reasoning it wants recorded."""

    action: str
    args: dict[str, Any] | str = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)


def proposal(args: BaseModel, action: str | None = None, **meta: Any) -> Proposal:
    """A proposal of a built-in action made from that action's own argument model.

    An actor written in code (the baseline, the tree agent) then names fields the way the
    action defines them, checked when the model is built, instead of re-spelling the schema as
    a raw dict that drifts when an argument is renamed. ``action`` is needed only where several
    actions share one model (Write File and Append File), and is checked against it.
    """
    from environments.acting.candidates import SCORE_CANDIDATE_ACTION
    from environments.acting.low_level import LOW_LEVEL_ACTIONS, RESTORE_WORKSPACE

    built_in = (*LOW_LEVEL_ACTIONS, RESTORE_WORKSPACE, SCORE_CANDIDATE_ACTION)
    names = [spec.name for spec in built_in if spec.args_model is type(args)]
    if action is None and len(names) != 1:
        raise TypeError(f"{type(args).__name__} is the model of {names or 'no built-in action'}: "
                        "name the action")
    if action is not None and action not in names:
        raise TypeError(f"{action!r} does not take {type(args).__name__}")
    return Proposal(action=action or names[0], args=args.model_dump(), meta=meta)


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
    """What drives a run: the four calls :func:`agent.runner.drive` makes, and three optional
    hooks that :class:`BaseActor` gives every actor a default for (``closing``, ``on_created``,
    ``config_kind``), so nothing looks for them by name."""

    kind: str
    """Recorded as each step's ``actor`` (replay, agent, baseline, human)."""

    config_kind: str | None
    """The factory kind a run created without a config is recorded as (None: from its model)."""

    def closing(self, env: Environment) -> Proposal | None:
        """The one step it ends with when a budget stops the run (``drive`` runs it only if it
        is a free action, such as Restore Workspace); None: no such step."""
        ...

    def on_created(self, run: RunDir) -> None:
        """Its run's folder exists (the replay actor keeps its actions file there)."""
        ...

    def on_end(self) -> None:
        """The run ended, however (a stop from the TUI, Ctrl-C, an error): release what the
        actor holds beyond the run's sandbox (the research pool's workers)."""
        ...

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


class BaseActor:
    """The defaults of :class:`Actor`'s optional parts; every actor inherits them."""

    config_kind: str | None = None

    def extra_actions(self) -> Sequence[ActionSpec]:
        return ()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        pass

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        pass

    def closing(self, env: Environment) -> Proposal | None:
        return None

    def on_created(self, run: RunDir) -> None:
        pass

    def on_end(self) -> None:
        pass
