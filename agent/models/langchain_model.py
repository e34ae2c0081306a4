"""``langchain/<module:Class>?key=value&...``: any LangChain chat model.

The options become the class's keyword arguments (values parsed as JSON where they parse).
Retries: the chat model's own (most have ``max_retries``), wrapped in LangChain's
``with_retry`` for classes that have none.
"""

from __future__ import annotations

import importlib
from typing import Any

from agent.models.base import (
    ModelConfigError,
    ModelError,
    Reply,
    ToolCall,
    Usage,
    estimated_usage,
    prompt_chars,
)
from agent.models.providers import ModelRef, cost_of


def load_chat_model(target: str, options: dict[str, Any]):
    module, _, cls = target.partition(":")
    if not module or not cls:
        raise ModelConfigError(f"langchain model {target!r}: write langchain/<module>:<Class>")
    try:
        klass = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as err:
        raise ModelConfigError(f"langchain model {target!r}: cannot import ({err})") from err
    try:
        return klass(**options)
    except Exception as err:  # noqa: BLE001 - any constructor failure is a configuration error
        raise ModelConfigError(f"langchain model {target!r}: {err}") from err


def to_lc_messages(messages: list[dict[str, Any]]):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


def reply_from_ai(msg, name: str, prompt: int) -> Reply:
    meta = getattr(msg, "usage_metadata", None) or {}
    text = msg.content if isinstance(msg.content, str) else "".join(
        b.get("text", "") for b in msg.content if isinstance(b, dict))
    if meta:
        details = meta.get("input_token_details") or {}
        usage = Usage(input=meta.get("input_tokens", 0), output=meta.get("output_tokens", 0),
                      cached=details.get("cache_read", 0) or 0)
    else:
        usage = estimated_usage(prompt, text)
    calls = [ToolCall(id=c.get("id") or "", name=c["name"], arguments=c.get("args") or {})
             for c in getattr(msg, "tool_calls", None) or []]
    return Reply(text=text, tool_calls=calls, usage=usage, cost=cost_of(name, usage), model=name)


class LangChainModel:
    def __init__(self, target: str, options: dict[str, Any], retries: int = 3) -> None:
        self.name = f"langchain/{target}"
        self.chat = load_chat_model(target, options)
        self.retries = retries

    @classmethod
    def from_ref(cls, ref: ModelRef, shared: dict | None = None) -> LangChainModel:
        """``labcoat_retries`` is labcoat's; every other option is the class's keyword argument."""
        options = dict(ref.options)
        retries = int(options.pop("labcoat_retries", 2))
        return cls(ref.name, options, retries=retries)

    def runnable(self, tools: list | None = None):
        chat = self.chat.bind_tools(tools) if tools else self.chat
        return chat.with_retry(stop_after_attempt=self.retries + 1) if self.retries else chat

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        lc_tools = [{"type": "function", "function": t} for t in tools] if tools else None
        try:
            msg = self.runnable(lc_tools).invoke(to_lc_messages(messages))
        except Exception as err:  # noqa: BLE001 - LangChain providers raise their own types
            raise ModelError(f"{self.name}: {type(err).__name__}: {err}") from err
        return reply_from_ai(msg, self.name, prompt_chars(messages))
