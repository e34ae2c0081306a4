"""``anthropic/<model>``: the official SDK, with prompt caching on the static prefix.

The system message (instructions, tool descriptions, research problem) is the same every step,
so it carries a ``cache_control`` mark and later calls read it from Anthropic's cache. So does
the step message's part that the next step repeats: it is split into text blocks at its
``cache_points`` (after the older steps, before each whole step; :mod:`agent.context`) and
the prefix up to the latest step is marked, so the next call, whose blocks start at the same
places, reads it back (Anthropic looks for cached prefixes at earlier block boundaries). Retries
and timeouts are labcoat's (:mod:`agent.models.policy`), with a hard deadline and a reply size
cap from the HTTP client (:mod:`agent.models.guard`); a 200 response that is not a message
with content blocks is malformed (and retried); missing usage is estimated and marked so.
"""

from __future__ import annotations

from typing import Any

from agent.models.base import (
    Reply,
    ToolCall,
    Usage,
    clean_text,
    clean_value,
    estimated_usage,
    prompt_chars,
)
from agent.models.guard import http_client
from agent.models.policy import CallPolicy, Malformed, call_with_retries
from agent.models.providers import KeyedClient, cost_of


def _turn(m: dict[str, Any]) -> dict[str, Any]:
    """A message for the API; one with ``cache_points`` as text blocks split there, the prefix up
    to the last point marked for the cache."""
    text, points = m["content"], [p for p in m.get("cache_points") or [] if 0 < p < len(m["content"])]
    if not points:
        return {"role": m["role"], "content": text}
    edges = [0, *points, len(text)]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text[a:b]} for a, b in zip(edges, edges[1:])
                                    if b > a]
    blocks[len(points) - 1]["cache_control"] = {"type": "ephemeral"}  # ends at the last point
    return {"role": m["role"], "content": blocks}


class AnthropicModel(KeyedClient):
    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 policy: CallPolicy | None = None, max_tokens: int = 4096, **params: Any) -> None:
        import anthropic

        self.name = f"anthropic/{model}"
        self.model = model
        self.max_tokens = max_tokens
        self.params = params
        self.policy = policy or CallPolicy()
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                          timeout=self.policy.timeout, http_client=http_client())

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [_turn(m) for m in messages if m["role"] != "system"]
        kw: dict[str, Any] = dict(self.params)
        if system:
            kw["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        if tools:
            kw["tools"] = [{"name": t["name"], "description": t["description"],
                            "input_schema": t["parameters"]} for t in tools]

        def attempt(timeout: float) -> Reply:
            raw = self.client.messages.with_raw_response.create(
                model=self.model, max_tokens=self.max_tokens, messages=turns, timeout=timeout, **kw)
            return self._reply(raw.parse(), messages)

        return call_with_retries(self.name, self.policy, attempt)

    def _reply(self, resp: Any, messages: list[dict[str, Any]]) -> Reply:
        from anthropic.types import Message

        if not isinstance(resp, Message):
            raise Malformed(f"the body is not a message ({type(resp).__name__})")
        if not resp.content:
            raise Malformed("the response has no content blocks")
        text, calls = [], []
        for block in resp.content:
            if getattr(block, "type", None) == "text":
                text.append(clean_text(block.text))
            elif getattr(block, "type", None) == "tool_use":
                calls.append(ToolCall(id=block.id or "", name=clean_text(block.name),
                                      arguments=clean_value(dict(block.input or {}))))
        reply = "".join(text)
        u = resp.usage
        if u is None or u.input_tokens is None or u.output_tokens is None:
            usage = estimated_usage(prompt_chars(messages), reply + "".join(str(c.arguments) for c in calls))
        else:
            read = u.cache_read_input_tokens or 0
            written = u.cache_creation_input_tokens or 0
            usage = Usage(input=u.input_tokens + read + written, output=u.output_tokens, cached=read)
        return Reply(text=reply, tool_calls=calls, usage=usage, cost=cost_of(self.name, usage),
                     model=self.name)
