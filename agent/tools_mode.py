"""``--mode tools``: the same actions as native tool schemas, the same pydantic models.

Tool names must match ``^[a-zA-Z0-9_-]+$`` for the providers, so "Edit Script (AI)" is offered
as ``Edit_Script_AI`` and mapped back.
"""

from __future__ import annotations

import re
from typing import Any

from agent.models import Reply
from agent.models.react_format import FormatError, _sections
from environments.acting.actions import ActionSpec


def tool_name(action: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^a-zA-Z0-9_-]", "_", action)).strip("_")


def tool_schemas(specs: list[ActionSpec]) -> list[dict[str, Any]]:
    return [{"name": tool_name(s.name), "description": s.description, "parameters": s.json_schema()}
            for s in specs]


def parse_tool_reply(reply: Reply, specs: list[ActionSpec]) -> tuple[str, dict[str, Any] | str, dict[str, str]]:
    """(action name, arguments, text fields) from a reply that should call one tool."""
    if not reply.tool_calls:
        raise FormatError("it called no tool.")
    call = reply.tool_calls[0]
    names = {tool_name(s.name): s.name for s in specs}
    action = names.get(call.name, call.name)
    text = reply.text or ""
    marks = _sections(text)
    fields = {}
    for i, (name, body, _) in enumerate(marks):
        end = marks[i + 1][2] if i + 1 < len(marks) else len(text)
        fields.setdefault(name, text[body:end].strip())
    if not marks and text.strip():
        fields["Thought"] = text.strip()
    fields["Action"] = action
    return action, call.arguments, fields
