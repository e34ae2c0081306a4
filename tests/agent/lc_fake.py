"""A LangChain chat model that replies from a JSONL file (content, tool calls), for tests."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedToolChat(BaseChatModel):
    path: str
    position: int = 0
    bound: list[str] = []
    seen: list[int] = []

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-chat"

    def bind_tools(self, tools: list[Any], **kw: Any):
        self.bound = [getattr(t, "name", None) or t["function"]["name"] for t in tools]
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kw) -> ChatResult:
        items = [json.loads(line) for line in open(self.path) if line.strip()]
        item = items[self.position]
        self.position += 1
        self.seen.append(len(messages))
        calls = [{"name": c["name"], "args": c["args"], "id": f"call_{self.position}_{n}"}
                 for n, c in enumerate(item.get("tool_calls", []))]
        msg = AIMessage(content=item.get("content", ""), tool_calls=calls,
                        usage_metadata={"input_tokens": 50, "output_tokens": 5, "total_tokens": 55})
        return ChatResult(generations=[ChatGeneration(message=msg)])


class HangingChat(BaseChatModel):
    """A chat model whose call never returns (a LangChain class with an unbounded client)."""

    hold: float = 3600.0

    @property
    def _llm_type(self) -> str:
        return "hanging-chat"

    def _generate(self, messages, stop=None, run_manager=None, **kw) -> ChatResult:
        import time

        time.sleep(self.hold)
        raise AssertionError("never reached within a test")
