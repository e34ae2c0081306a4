"""A llama.cpp GBNF grammar for the ReAct reply, built from the actions' JSON schemas.

A small local model follows the ReAct format on easy steps and drifts on others (a missing
``Action Input``, prose instead of JSON, an invented action). Decoding under this grammar makes
every reply parse (:func:`agent.models.react_format.parse_response`) with a known action and an input that
has the action's keys and types: each of Reflection, Research Plan and Status, Fact Check and
Thought is one bounded line of free text, then ``Action: <one of the names>`` and ``Action
Input:`` a JSON object that the action's pydantic model (its JSON schema) allows.
The schema-to-GBNF conversion is llama-cpp-python's own (``SchemaConverter``).
"""

from __future__ import annotations

import json
from typing import Any

FIELD_CHARS = {"Reflection": 160, "Research Plan and Status": 300, "Fact Check": 100, "Thought": 160}


def _literal(text: str) -> str:
    return json.dumps(text)  # GBNF literals take JSON's escapes


def react_grammar(actions: list[tuple[str, dict[str, Any]]]) -> str:
    """GBNF for a reply in the ReAct format choosing one of ``actions`` (name, JSON schema)."""
    from llama_cpp.llama_grammar import SchemaConverter

    conv = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    choices = []
    for i, (name, schema) in enumerate(actions):
        rule = conv.visit(conv.resolve_refs(schema, f"action{i}"), f"input{i}")
        choices.append(f'"Action: " {_literal(name)} "\\nAction Input: " {rule}')
    fields = " ".join(f'{_literal(f + ": ")} line{n} "\\n"' for f, n in FIELD_CHARS.items())
    lines = "\n".join(f'line{n} ::= [^\\n]{{1,{n}}}' for n in sorted(set(FIELD_CHARS.values())))
    head = (f"root ::= {fields} action\n"
            f"action ::= {' | '.join(f'act{i}' for i in range(len(choices)))}\n"
            + "\n".join(f"act{i} ::= {c}" for i, c in enumerate(choices)) + "\n" + lines + "\n")
    return head + conv.format_grammar()
