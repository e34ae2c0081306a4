"""Parsing a ReAct research-agent response: pure functions, forgiving of what models write.

A response has the fields Reflection, Research Plan and Status, Fact Check, Thought, Action and
Action Input (a JSON object). Headers may be bold, headed (``###``) or in any case; the Action
Input may sit in a code fence, use single quotes, Python literals or trailing commas, hold raw
newlines in strings, and be followed by prose. Anything else raises :class:`FormatError`,
whose message tells the model what to fix.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from agent.models.base import clean_value
from environments.in_sandbox.channel import json_depth

FIELDS = ["Reflection", "Research Plan and Status", "Fact Check", "Thought", "Action Input", "Action"]
_HEADER = re.compile(
    r"^[ \t>#*_`-]*(" + "|".join(re.escape(f) for f in FIELDS) + r")[ \t*_`]*:[ \t*_`]*",
    re.IGNORECASE | re.MULTILINE,
)
_CANON = {f.lower(): f for f in FIELDS}


class FormatError(ValueError):
    """The response cannot be parsed; the message says what is wrong."""


@dataclass
class Parsed:
    action: str
    action_input: dict[str, Any]
    fields: dict[str, str] = field(default_factory=dict)


def _sections(text: str) -> list[tuple[str, int, int]]:
    """(field, start of body, start of header) for every header line."""
    return [(_CANON[m.group(1).lower()], m.end(), m.start()) for m in _HEADER.finditer(text)]


def parse_response(text: str) -> Parsed:
    """The action, its input and the other fields of one response."""
    marks = _sections(text)
    inputs = [i for i, (name, _, _) in enumerate(marks) if name == "Action Input"]
    actions = [i for i, (name, _, _) in enumerate(marks) if name == "Action"
               and (not inputs or i < inputs[0])]
    if not actions:
        raise FormatError("the response has no 'Action:' line.")
    if not inputs:
        raise FormatError("the response has no 'Action Input:' (a JSON object) after 'Action:'.")
    a, ai = actions[-1], inputs[0]
    fields: dict[str, str] = {}
    for i, (name, body, _) in enumerate(marks[:ai]):
        end = marks[i + 1][2] if i + 1 < len(marks) else len(text)
        fields.setdefault(name, text[body:end].strip())
    action = clean_action_name(text[marks[a][1]:marks[a + 1][2] if a + 1 < len(marks) else len(text)])
    if not action:
        raise FormatError("the 'Action:' line is empty; write the name of one action.")
    raw_input = text[marks[ai][1]:]
    fields["Action"] = action
    fields["Action Input"] = raw_input.strip()
    return Parsed(action=action, action_input=parse_action_input(raw_input), fields=fields)


def clean_action_name(text: str) -> str:
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    name = line.strip()
    while True:
        cleaned = name.strip("*`'\"_ ").rstrip(".:,")
        if cleaned == name:
            return name
        name = cleaned


def parse_action_input(text: str) -> dict[str, Any]:
    """The first JSON-ish object in ``text``; ``{}`` when there is plainly none."""
    body = text.strip()
    start = body.find("{")
    if start < 0:
        if body.strip("`").strip().lower() in ("", "none", "null", "json"):
            return {}
        raise FormatError("Action Input must be a JSON object, e.g. {\"dir_path\": \".\"}.")
    candidate = _balanced(body, start)
    value = _decode(candidate)
    if not isinstance(value, dict):
        raise FormatError("Action Input must be a JSON object.")
    return clean_value(value)  # a JSON escape of a lone surrogate cannot be written as UTF-8


def _balanced(text: str, start: int) -> str:
    """From ``start`` (a ``{``) to its matching ``}``, skipping braces inside strings."""
    depth, quote, i = 0, "", start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = ""
                continue
        elif c in "\"'":
            quote = c * 3 if text.startswith(c * 3, i) else c
            i += len(quote)
            continue
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
        i += 1
    raise FormatError("the Action Input's braces are not balanced (is the JSON object cut off?).")


def _pythonize(text: str) -> str:
    """JSON's true/false/null as Python literals, outside strings."""
    out, quote, i = [], "", 0
    while i < len(text):
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
            out.append(c)
        else:
            m = re.match(r"(true|false|null)\b", text[i:])
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                out.append({"true": "True", "false": "False", "null": "None"}[m.group(1)])
                i += len(m.group(1))
                continue
            out.append(c)
        i += 1
    return "".join(out)


MAX_DEPTH = 100
"""How deep an Action Input may nest: no action's arguments come near it, and the parsers
recurse per level (a model's reply is untrusted input too)."""


def _decode(candidate: str) -> Any:
    if json_depth(candidate) > MAX_DEPTH:
        raise FormatError(f"Action Input nests deeper than {MAX_DEPTH} levels; send a flat JSON object.")
    attempts = [candidate, re.sub(r",(\s*[}\]])", r"\1", candidate)]
    for a in attempts:
        try:
            return json.loads(a, strict=False)
        except (json.JSONDecodeError, RecursionError):
            pass
    for a in (candidate, _pythonize(candidate)):
        try:
            return ast.literal_eval(a)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    # raw newlines inside single-quoted strings: Python literals refuse them
    try:
        return ast.literal_eval(_pythonize(candidate).replace("\r", "").replace("\n", "\\n"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    try:
        json.loads(candidate, strict=False)
    except RecursionError:
        pass
    except json.JSONDecodeError as err:
        raise FormatError(f"Action Input is not valid JSON ({err.msg} at line {err.lineno} "
                          f"column {err.colno}).") from err
    raise FormatError("Action Input is not valid JSON.")
