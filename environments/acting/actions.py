"""The action framework: one pydantic model per action drives usage text, schema and checks.

The same :class:`ActionSpec` feeds the LLM prompt (:meth:`ActionSpec.usage`), native tool
calling and the LangChain adapter (:meth:`ActionSpec.json_schema`), the TUI's generated form
(the model's fields), and validation (:meth:`ActionSpec.validate`), so the four can never
disagree about what an action takes. What only some readers use also lives on the model, next to
what it qualifies: an argument's :class:`Brief` (the research prompt's shorter wording; its
``description`` stays MLAgentBench's, which tools mode, LangChain and usage text show) and
:data:`LONG` (free text: a text area in the form), as ``Annotated`` metadata, which the JSON
Schema sent to providers leaves out; an action's ``brief`` on its :class:`ActionSpec`.

A handler gets an :class:`ActionContext`, not the Environment: the few things an action may
use (the task's facts, the guarded workspace, its backups, the run's sandbox, the observation
cap, the steps taken so far). The Environment implements it; so can a test. This keeps the
action modules (low-level, tool, validation, the agent's LLM actions) below the Environment
that registers them, with no import circle between them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

from environments.untrusted.bounded import LimitError, loads_json

if TYPE_CHECKING:
    from environments.acting.observation import Observation
    from environments.acting.paths import PathGuard
    from environments.record.backups import Backups
    from environments.task.spec import TaskSpec
    from sandbox import Sandbox


class ActionArgs(BaseModel):
    """Base for action argument models: unknown fields are an error the actor is told about."""

    model_config = ConfigDict(extra="forbid")


class ActionInputError(ValueError):
    """Arguments that do not fit an action; the message lists the problems and the usage."""


class ActionFailed(RuntimeError):
    """The action was valid but could not be done; the message is shown to the actor.

    A handler raises it (or a ``WorkspaceError``) for the actor's mistakes; whoever executes
    actions turns it into an error observation, so a handler never builds one for a refusal."""


class ActionContext(Protocol):
    """What an action handler may use, and nothing more (the Environment implements it).

    Narrow on purpose: a handler that needs something new adds it here, in the open, instead
    of reaching into whatever object happens to execute it."""

    @property
    def task(self) -> TaskSpec:
        """The task's facts: limits, research problem, metric, feedback budget, scripts."""

    @property
    def workspace(self) -> Path:
        """The host folder of the workspace (scoring copies it; file actions use ``guard``)."""

    @property
    def guard(self) -> PathGuard:
        """Every actor-given path goes through it; ``guard.fs`` does the race-proof I/O."""

    @property
    def backups(self) -> Backups:
        """Earlier versions of written files, for Undo Edit Script."""

    @property
    def sandbox(self) -> Sandbox:
        """The run's sandbox: every command an action runs runs here."""

    @property
    def sandbox_kind(self) -> str:
        """The backend a fresh sandbox for this run must use (scoring opens its own)."""

    @property
    def run_folder(self) -> Path | None:
        """Where the run keeps its own files (a research log), None when unrecorded."""

    def observe(self, text: str, **kw: Any) -> Observation:
        """An observation capped by the session's setting (``make_observation``'s keywords)."""

    def steps(self) -> Sequence[BaseModel]:
        """The steps taken so far (the run's trace, or an unrecorded session's own), oldest
        first: an action that is rationed (Validate Submission) counts its uses here."""

    def restore_step(self, index: int, dest: Path | None = None) -> int:
        """Make the workspace (or the empty folder ``dest``) exactly as step ``index`` left it
        (0: the start), from the run's snapshot; the number of files it then holds.
        :class:`ActionFailed` when there is no such recorded, stored snapshot."""

    @property
    def step_index(self) -> int:
        """The index the step being taken will have in the trace (what a ledger line names)."""


Handler = Callable[[ActionContext, Any], "Observation"]


@dataclass(frozen=True)
class Brief:
    """An argument's wording in the research prompt, shorter than its description; "" when
    its name and its action say it all (``file_name``: see the action list's head)."""

    text: str


@dataclass(frozen=True)
class LongText:
    """Marks a free-text argument (file contents, an instruction, an answer)."""


LONG = LongText()
#: an Action Input given as a JSON string (tools mode, a replay file): bounded like every parse
#: of untrusted text (``environments.untrusted.bounded``); no action's arguments come near either bound
INPUT_BYTES, INPUT_DEPTH = 16 << 20, 100


def brief_of(info: FieldInfo) -> str | None:
    """The argument's :class:`Brief`, or None when it has none (its description is shown)."""
    return next((m.text for m in info.metadata if isinstance(m, Brief)), None)


def is_long(info: FieldInfo) -> bool:
    return any(isinstance(m, LongText) for m in info.metadata)


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    args_model: type[BaseModel]
    handler: Handler
    kind: str = "low-level"  # "low-level", "tool" (a method tool), "llm" (agent-side)
    brief: str | None = None  # what it does, in the research prompt's words (else its description)
    free: bool = False  # runs no command and calls no model: the one kind of step a run may take
    #                     after a budget ran out (agent.runner.drive's closing step)

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

    def invalid_input(self, problem: object) -> str:
        """What an actor is told when its input for this action does not validate: the one
        wording the environment, a LangChain tool and the research agent's retry all use."""
        return f"The action input for {self.name} is invalid: {problem}\nUsage:\n{self.usage()}"

    def describe(self) -> str:
        """The block a prompt lists for this action."""
        return f"- {self.name}:\n    {self.description}\n    Usage:\n    ```\n    Action: {self.name}\n    Action Input: {_indent(self.usage())}\n    ```"

    def validate(self, args: Any) -> BaseModel:
        """Validated arguments, or :class:`ActionInputError` naming each bad field."""
        if isinstance(args, str):
            try:
                args = loads_json(args, max_bytes=INPUT_BYTES, max_depth=INPUT_DEPTH,
                                  what="Action Input") if args.strip() else {}
            except LimitError as err:
                raise ActionInputError(f"{err}.") from err
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
