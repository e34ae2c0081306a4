"""``langchain/<module:Class>?key=value&...``: any LangChain chat model.

The options become the class's keyword arguments (values parsed as JSON where they parse).
Retries: the chat model's own (most have ``max_retries``), wrapped in LangChain's
``with_retry`` for classes that have none.

A LangChain class brings its own HTTP client (or none: a local model), so labcoat cannot bound
its socket waits as it does the SDKs' (:mod:`agent.models.guard`). The call's deadline
(``labcoat_deadline`` / ``LABCOAT_LLM_DEADLINE``, 300 s) is kept from outside instead: the call
runs in a worker thread and the run stops waiting for it when the deadline comes. The thread
cannot be killed, so it is left to end by itself (a daemon: it never holds labcoat's exit), and
what it returns late is dropped; the run goes on with a :class:`ModelError`, as for any failed
call.
"""

from __future__ import annotations

import importlib
import os
import threading
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


def invoke_within(runnable: Any, messages: list, deadline: float, name: str) -> Any:
    """``runnable.invoke(messages)``, or :class:`ModelError` once ``deadline`` seconds pass."""
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["reply"] = runnable.invoke(messages)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread as is
            outcome["error"] = err
        finally:
            done.set()

    threading.Thread(target=call, name=f"labcoat-{name}", daemon=True).start()
    if not done.wait(deadline):
        raise ModelError(f"{name}: the call's deadline of {deadline:g} s came while waiting for "
                         "the reply (the call was abandoned)")
    if "error" in outcome:
        err = outcome["error"]
        raise ModelError(f"{name}: {type(err).__name__}: {err}") from err
    return outcome["reply"]


def _deadline(options: dict[str, Any]) -> float:
    value = options.pop("labcoat_deadline", None) or os.environ.get("LABCOAT_LLM_DEADLINE") or 300
    try:
        deadline = float(value)
    except (TypeError, ValueError):
        deadline = -1.0
    if not deadline > 0:
        raise ModelConfigError(f"labcoat_deadline must be a positive number of seconds, not {value!r}")
    return deadline


class LangChainModel:
    def __init__(self, target: str, options: dict[str, Any], retries: int = 3,
                 deadline: float = 300.0) -> None:
        self.name = f"langchain/{target}"
        self.chat = load_chat_model(target, options)
        self.retries, self.deadline = retries, deadline

    @classmethod
    def from_ref(cls, ref: ModelRef, shared: dict | None = None) -> LangChainModel:
        """``labcoat_retries`` and ``labcoat_deadline`` are labcoat's; every other option is the
        class's keyword argument."""
        options = dict(ref.options)
        retries = int(options.pop("labcoat_retries", 2))
        return cls(ref.name, options, retries=retries, deadline=_deadline(options))

    def invoke(self, runnable: Any, messages: list) -> Any:
        """One call of ``runnable`` (from :meth:`runnable`) within the call's deadline."""
        return invoke_within(runnable, messages, self.deadline, self.name)

    def runnable(self, tools: list | None = None):
        chat = self.chat.bind_tools(tools) if tools else self.chat
        return chat.with_retry(stop_after_attempt=self.retries + 1) if self.retries else chat

    def complete(self, messages: list[dict[str, Any]], *,
                 tools: list[dict[str, Any]] | None = None) -> Reply:
        lc_tools = [{"type": "function", "function": t} for t in tools] if tools else None
        msg = self.invoke(self.runnable(lc_tools), to_lc_messages(messages))
        return reply_from_ai(msg, self.name, prompt_chars(messages))
