"""``openai/<model>``: the official SDK; ``OPENAI_BASE_URL`` reaches any compatible server.

Retries and timeouts are labcoat's (:mod:`agent.models.policy`), the SDK's own are off; its
HTTP client bounds each call by its deadline and its reply by a size cap
(:mod:`agent.models.guard`). A 200 response is checked before use: a body that is not a chat
completion with a choice is malformed (and retried); missing usage is estimated and marked so.
"""

from __future__ import annotations

import json
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


def _tool(t: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": t["name"], "description": t["description"],
                                             "parameters": t["parameters"]}}


class OpenAIModel(KeyedClient):
    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 policy: CallPolicy | None = None, **params: Any) -> None:
        import openai

        self.name = f"openai/{model}"
        self.model = model
        self.params = params  # temperature, max_tokens, ...
        self.policy = policy or CallPolicy()
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                                    timeout=self.policy.timeout, http_client=http_client())

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        kw: dict[str, Any] = dict(self.params)
        if tools:
            kw["tools"] = [_tool(t) for t in tools]
        sent = [{"role": m["role"], "content": m["content"]} for m in messages]  # its prefix cache is automatic

        def attempt(timeout: float) -> Reply:
            raw = self.client.chat.completions.with_raw_response.create(
                model=self.model, messages=sent, timeout=timeout, **kw)
            return self._reply(raw.parse(), messages)

        return call_with_retries(self.name, self.policy, attempt)

    def _reply(self, resp: Any, messages: list[dict[str, Any]]) -> Reply:
        from openai.types.chat import ChatCompletion

        if not isinstance(resp, ChatCompletion):
            raise Malformed(f"the body is not a chat completion ({type(resp).__name__})")
        if not resp.choices or resp.choices[0].message is None:
            raise Malformed("the response has no choices")
        msg = resp.choices[0].message
        calls = []
        for c in msg.tool_calls or []:
            try:
                args: dict | str = clean_value(json.loads(c.function.arguments or "{}"))
            except json.JSONDecodeError:
                args = clean_text(c.function.arguments)
            calls.append(ToolCall(id=c.id or "", name=clean_text(c.function.name), arguments=args))
        text = clean_text(msg.content)
        u = resp.usage
        if u is None or u.prompt_tokens is None or u.completion_tokens is None:
            usage = estimated_usage(prompt_chars(messages), text + "".join(str(c.arguments) for c in calls))
        else:
            cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0) or 0
            usage = Usage(input=u.prompt_tokens, output=u.completion_tokens, cached=cached)
        return Reply(text=text, tool_calls=calls, usage=usage, cost=cost_of(self.name, usage),
                     model=self.name)
