"""The Model protocol every provider implements, the per-call Usage, and the price table.

A model takes chat messages (``{"role": "system"|"user"|"assistant", "content": str}``) and,
optionally, neutral tool schemas (``{"name", "description", "parameters"}``), and returns one
:class:`Reply`. Timeouts and retries follow :mod:`agent.models.policy`; when they are spent the
client raises :class:`ModelError`, which the agent turns into the run's ``error`` status.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
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
    """A model call failed for good (retries spent, bad key, malformed response)."""


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


# US dollars per million tokens: (input, output, cached input). Longest matching prefix wins.
# Extend or override in $LABCOAT_PRICES or $LABCOAT_HOME/prices.toml:
#   ["openai/my-model"]
#   input = 1.0
#   output = 2.0
#   cached = 0.5
PRICES: dict[str, tuple[float, float, float]] = {
    "openai/gpt-4o-mini": (0.15, 0.60, 0.075),
    "openai/gpt-4o": (2.50, 10.00, 1.25),
    "openai/gpt-4.1-nano": (0.10, 0.40, 0.025),
    "openai/gpt-4.1-mini": (0.40, 1.60, 0.10),
    "openai/gpt-4.1": (2.00, 8.00, 0.50),
    "openai/gpt-5-mini": (0.25, 2.00, 0.025),
    "openai/gpt-5": (1.25, 10.00, 0.125),
    "openai/o3": (2.00, 8.00, 0.50),
    "openai/o4-mini": (1.10, 4.40, 0.275),
    "anthropic/claude-opus-4": (15.00, 75.00, 1.50),
    "anthropic/claude-sonnet-4": (3.00, 15.00, 0.30),
    "anthropic/claude-3-7-sonnet": (3.00, 15.00, 0.30),
    "anthropic/claude-3-5-sonnet": (3.00, 15.00, 0.30),
    "anthropic/claude-haiku-4": (1.00, 5.00, 0.10),
    "anthropic/claude-3-5-haiku": (0.80, 4.00, 0.08),
    "scripted/": (0.0, 0.0, 0.0),
    "llamacpp/": (0.0, 0.0, 0.0),  # in-process: no bill
    "baseline/": (0.0, 0.0, 0.0),
}


def user_prices() -> dict[str, tuple[float, float, float]]:
    """Prices from ``$LABCOAT_PRICES`` (TOML or JSON) or ``$LABCOAT_HOME/prices.toml``."""
    path = os.environ.get("LABCOAT_PRICES")
    if not path:
        home = Path(os.environ.get("LABCOAT_HOME", "~/.cache/labcoat")).expanduser()
        path = str(home / "prices.toml")
    p = Path(path)
    if not p.is_file():
        return {}
    text = p.read_text()
    data = json.loads(text) if p.suffix == ".json" else tomllib.loads(text)
    out = {}
    for name, v in data.items():
        if not isinstance(v, dict) or "input" not in v or "output" not in v:
            raise ModelConfigError(f"{p}: price of {name!r} needs input and output ($ per 1M tokens)")
        out[name] = (float(v["input"]), float(v["output"]), float(v.get("cached", v["input"])))
    return out


def price_of(model: str) -> tuple[float, float, float] | None:
    table = {**PRICES, **user_prices()}
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return table[best] if best else None


def cost_of(model: str, usage: Usage) -> float:
    """Dollars for one call; 0 for a model without a price (the call log says so)."""
    price = price_of(model)
    if price is None:
        return 0.0
    p_in, p_out, p_cached = price
    fresh = max(0, usage.input - usage.cached)
    return (fresh * p_in + usage.cached * p_cached + usage.output * p_out) / 1e6


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
