"""The action framework: one pydantic model per action drives usage text, schema and checks.

The same :class:`ActionSpec` feeds the LLM prompt (:meth:`ActionSpec.usage`), native tool
calling and the LangChain adapter (:meth:`ActionSpec.json_schema`), the TUI's generated form
(the model's fields), and validation (:meth:`ActionSpec.validate`), so the four can never
disagree about what an action takes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from environments.environment import Environment
    from environments.observation import Observation


class ActionArgs(BaseModel):
    """Base for action argument models: unknown fields are an error the actor is told about."""

    model_config = ConfigDict(extra="forbid")


class ActionInputError(ValueError):
    """Arguments that do not fit an action; the message lists the problems and the usage."""


Handler = Callable[["Environment", Any], "Observation"]


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    args_model: type[BaseModel]
    handler: Handler
    kind: str = "low-level"  # "low-level", "tool" (a method tool), "llm" (agent-side)

    def json_schema(self) -> dict[str, Any]:
        return self.args_model.model_json_schema()

    def usage(self) -> str:
        """MLAgentBench-style usage: the JSON object to write, each value its description."""
        fields = self.args_model.model_fields
        if not fields:
            return "{}"
        lines = []
        for name, f in fields.items():
            desc = f.description or name
            if not f.is_required():
                desc += f" (optional, default {f.get_default(call_default_factory=True)!r})"
            lines.append(f'    "{name}": [{desc}]')
        return "{\n" + ",\n".join(lines) + "\n}"

    def describe(self) -> str:
        """The block a prompt lists for this action."""
        return f"- {self.name}:\n    {self.description}\n    Usage:\n    ```\n    Action: {self.name}\n    Action Input: {_indent(self.usage())}\n    ```"

    def validate(self, args: Any) -> BaseModel:
        """Validated arguments, or :class:`ActionInputError` naming each bad field."""
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError as err:
                raise ActionInputError(f"Action Input is not valid JSON ({err}).") from err
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ActionInputError("Action Input must be a JSON object.")
        try:
            return self.args_model.model_validate(args)
        except ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in err.errors()
            )
            raise ActionInputError(problems) from err


def _indent(text: str) -> str:
    return text.replace("\n", "\n    ")
