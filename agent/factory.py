"""Building an actor from the command line's ``--agent`` / ``--model`` choices."""

from __future__ import annotations

from pathlib import Path

from agent.actor import Actor
from agent.replay import ReplayActor


class AgentConfigError(ValueError):
    """A choice of agent or model that cannot work; raised before the run starts."""


def make_actor(agent: str | None, *, actions: Path | None = None, **options) -> Actor:
    """The actor for ``--agent`` (default: replay when an actions file is given)."""
    agent = agent or ("replay" if actions else None)
    if agent == "replay":
        if actions is None:
            raise AgentConfigError("--agent replay needs --actions FILE.jsonl")
        return ReplayActor.from_file(actions)
    raise AgentConfigError(f"unknown agent {agent!r}; available: replay")
