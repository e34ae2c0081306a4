"""The Model protocol every provider implements and the per-call Usage (prices: :mod:`agent.models.providers`).

A model takes chat messages (``{"role": "system"|"user"|"assistant", "content": str}``) and,
optionally, neutral tool schemas (``{"name", "description", "parameters"}``), and returns one
:class:`Reply`. Timeouts and retries follow :mod:`agent.models.policy`; when they are spent the
client raises :class:`ModelError`, which the agent turns into the run's ``error`` status.
"""

from __future__ import annotations

import re
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str | None) -> str:
    """Text with lone surrogates (a broken server's ``\\ud800``, raw or as a JSON escape once
    decoded) as U+FFFD, so it can be written as UTF-8 anywhere (trace, sandbox files, the TUI)."""
    return _SURROGATE.sub("\ufffd", text or "")


def one_line(text: str, width: int) -> str:
    """``text`` flattened to one line of at most ``width`` characters (cut with an ellipsis):
    error reasons and digests are read in a single status or trace line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def clean_value(value: Any) -> Any:
    """:func:`clean_text` on every string of a decoded JSON value (an action's input)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_value(v) for v in value]
    return value


class ModelError(RuntimeError):
    """A model call failed for good (retries spent, bad key, malformed response).

    ``unreachable``: no try reached the model (every one refused, reset or unresolved before an
    answer): the machine's failure, not the model's, so the run ends as an infrastructure
    failure (``RunMeta.infrastructure``) and is not scored as the model's attempt."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


def unreachable_model(err: BaseException | None) -> bool:
    """Whether ``err`` or an error it was raised from is a :class:`ModelError` that never
    reached its model (actors wrap it: ``raise ActorError(...) from err``)."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, ModelError) and err.unreachable:
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


class ModelConfigError(ValueError):
    """A model string or key that cannot work; raised before the run starts."""


class Usage(BaseModel):
    input: int = Field(0, description="all prompt tokens, cached ones included")
    output: int = 0
    cached: int = Field(0, description="prompt tokens read from the provider's cache")
    estimated: bool = Field(False, description="counted by labcoat (the model reported no usage)")

    def __add__(self, other: Usage) -> Usage:
        return Usage(input=self.input + other.input, output=self.output + other.output,
                     cached=self.cached + other.cached, estimated=self.estimated or other.estimated)


class ToolCall(BaseModel):
    id: str = ""
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class Reply(BaseModel):
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost: float = 0.0
    retries: int = 0
    model: str = ""


@runtime_checkable
class Model(Protocol):
    name: str
    """The full model string, ``provider/model``."""

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        ...

# Optional, for a model with a small window or a constrained decoder (the llama.cpp one); the
# research agent looks for them with getattr: ``context_window`` (prompt tokens a call may
# send), ``count_tokens(messages)`` (by the model's own tokenizer), ``takes_grammar`` (then
# ``complete`` also takes ``grammar=`` GBNF text for react replies).


def estimate_tokens(text: str) -> int:
    """A rough token count (about 4 characters a token) for models that report none."""
    return max(1, len(text) // 4) if text else 0


def prompt_chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(str(m.get("content", ""))) for m in messages)


def estimated_usage(prompt: int, reply: str) -> Usage:
    """Usage for a model that reported none (a scripted file, a server that left it out), from
    the prompt's length in characters, marked ``estimated`` so the call log says so."""
    return Usage(input=max(1, prompt // 4) if prompt else 0, output=estimate_tokens(reply) or 1,
                 estimated=True)
