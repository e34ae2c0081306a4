"""``anthropic/<model>``: the official SDK, with prompt caching on the static prefix.

The system message (instructions, tool descriptions, research problem) is the same every step,
so it carries a ``cache_control`` mark and later calls read it from Anthropic's cache.
"""

from __future__ import annotations

from typing import Any

from agent.models.base import ModelError, Reply, ToolCall, Usage, cost_of


class AnthropicModel:
    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 timeout: float = 120.0, max_retries: int = 4, max_tokens: int = 4096,
                 **params: Any) -> None:
        import anthropic

        self.name = f"anthropic/{model}"
        self.model = model
        self.max_tokens = max_tokens
        self.params = params
        self._errors = (anthropic.APIError,)
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout,
                                          max_retries=max_retries)

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
        kw: dict[str, Any] = dict(self.params)
        if system:
            kw["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        if tools:
            kw["tools"] = [{"name": t["name"], "description": t["description"],
                            "input_schema": t["parameters"]} for t in tools]
        try:
            raw = self.client.messages.with_raw_response.create(
                model=self.model, max_tokens=self.max_tokens, messages=turns, **kw)
            resp = raw.parse()
        except self._errors as err:
            raise ModelError(f"{self.name}: {type(err).__name__}: {err}") from err
        text, calls = [], []
        for block in resp.content or []:
            if block.type == "text":
                text.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input or {})))
        u = resp.usage
        read = u.cache_read_input_tokens or 0
        written = u.cache_creation_input_tokens or 0
        usage = Usage(input=u.input_tokens + read + written, output=u.output_tokens, cached=read)
        return Reply(text="".join(text), tool_calls=calls, usage=usage,
                     cost=cost_of(self.name, usage), retries=raw.retries_taken, model=self.name)
