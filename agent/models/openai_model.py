"""``openai/<model>``: the official SDK; ``OPENAI_BASE_URL`` reaches any compatible server."""

from __future__ import annotations

import json
from typing import Any

from agent.models.base import ModelError, Reply, ToolCall, Usage, cost_of


def _tool(t: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": t["name"], "description": t["description"],
                                             "parameters": t["parameters"]}}


class OpenAIModel:
    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 timeout: float = 120.0, max_retries: int = 4, **params: Any) -> None:
        import openai

        self.name = f"openai/{model}"
        self.model = model
        self.params = params  # temperature, max_tokens, ...
        self._errors = (openai.APIError,)
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout,
                                    max_retries=max_retries)

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        kw: dict[str, Any] = dict(self.params)
        if tools:
            kw["tools"] = [_tool(t) for t in tools]
        try:
            raw = self.client.chat.completions.with_raw_response.create(
                model=self.model, messages=messages, **kw)
            resp = raw.parse()
        except self._errors as err:
            raise ModelError(f"{self.name}: {type(err).__name__}: {err}") from err
        if not getattr(resp, "choices", None):
            raise ModelError(f"{self.name}: the response has no choices")
        msg = resp.choices[0].message
        calls = []
        for c in msg.tool_calls or []:
            try:
                args: dict | str = json.loads(c.function.arguments or "{}")
            except json.JSONDecodeError:
                args = c.function.arguments
            calls.append(ToolCall(id=c.id, name=c.function.name, arguments=args))
        u = resp.usage
        cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0) or 0
        usage = Usage(input=u.prompt_tokens, output=u.completion_tokens, cached=cached) if u else Usage()
        return Reply(text=msg.content or "", tool_calls=calls, usage=usage,
                     cost=cost_of(self.name, usage), retries=raw.retries_taken, model=self.name)
