"""``scripted/<path>``: replies read from a file, in order (tests, demos, exact reproduction).

Two formats:

* ``*.jsonl`` -- one JSON object a line: ``{"content": "..."}``, optionally with
  ``"tool_calls": [{"name": ..., "arguments": {...}}]`` (for ``--mode tools``). A run's own
  call log (``llm/calls.jsonl``, whose lines hold ``"reply"``) is accepted too, so a run's model
  replies can be replayed exactly. A line with ``"seeds": [1, 2]`` is a reply only for runs
  with one of those seeds (the model string's ``seed`` option, which the factory sets to the
  run's seed), so one file can script how a model's sampling differs between seeds.
* anything else -- plain text, replies separated by a line that is exactly ``---8<---``.

Usage is estimated (about 4 characters a token) so budgets behave as with a real model; the
cost comes from the price table (``scripted/`` costs nothing unless a user prices it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.models.base import (
    ModelConfigError,
    ModelError,
    Reply,
    ToolCall,
    estimated_usage,
    prompt_chars,
)
from agent.models.providers import ModelRef, cost_of

SEPARATOR = "---8<---"


def load_replies(path: Path, seed: int = 0) -> list[Reply]:
    if not path.is_file():
        raise ModelConfigError(f"scripted model: no such replies file {path}")
    text = path.read_text()
    if path.suffix != ".jsonl":
        chunks = text.split("\n" + SEPARATOR + "\n")
        return [Reply(text=c.strip("\n")) for c in chunks if c.strip()]
    replies = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise ModelConfigError(f"{path}:{n}: not valid JSON ({err})") from err
        if isinstance(item, dict) and "reply" in item and "content" not in item:
            item = {"content": item.get("reply") or "", "tool_calls": item.get("tool_calls") or []}
        if not isinstance(item, dict) or "content" not in item:
            raise ModelConfigError(f'{path}:{n}: each line must be {{"content": "..."}}')
        if "seeds" in item and seed not in item["seeds"]:
            continue
        calls = [ToolCall.model_validate(c) for c in item.get("tool_calls") or []]
        replies.append(Reply(text=item["content"] or "", tool_calls=calls))
    return replies


class ScriptedModel:
    def __init__(self, path: str | Path, seed: int = 0) -> None:
        self.path = Path(path)
        self.name = f"scripted/{path}"
        self.seed = seed
        self.replies = load_replies(self.path, seed)
        self.position = 0

    @classmethod
    def from_ref(cls, ref: ModelRef, shared: dict | None = None) -> ScriptedModel:
        """One instance per replies file in ``shared`` (a run's roles read one script in turn)."""
        key = str(Path(ref.name).resolve())
        if shared is not None and key in shared:
            return shared[key]
        model = cls(ref.name, seed=int(ref.options.get("seed", 0)))
        if shared is not None:
            shared[key] = model
        return model

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        if self.position >= len(self.replies):
            raise ModelError(f"{self.name}: all {len(self.replies)} scripted replies are used up")
        reply = self.replies[self.position].model_copy(deep=True)
        self.position += 1
        reply.usage = estimated_usage(prompt_chars(messages), reply.text)
        reply.cost = cost_of(self.name, reply.usage)
        reply.model = self.name
        return reply
