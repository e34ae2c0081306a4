"""What an actor is, and the options that set it: one typed home for a run's configuration.

:class:`ActorConfig` (kind, models, mode, context settings, tree settings, observation cap, seed, replay file)
and :class:`~environments.record.runs.Budgets` are the whole of what a run is started with. They are
stored typed in ``run.json`` (``config``, ``limits``), ``BatchSpec`` holds them, and
:func:`agent.factory.make_actor` takes an ``ActorConfig``. Resuming a run is
``ActorConfig.from_meta(run.meta)``.

``ActorConfig`` extends ``environments.record.runs.ActorSpec`` (kind, model, seed: what every run
records) so that ``RunMeta`` can hold it typed without ``environments/`` importing ``agent/``.

:data:`OPTIONS` is every field of both models (``ContextSettings`` and ``TreeSettings``, the
tree agent's, flattened into them) as one
:class:`Option`: its flag, its help (the field's description), its type and its default, all read
from the models. The CLI's flags (``tui/cli/run.py``) and the TUI's setup form
(``tui/screens/agent_setup.py``) are generated from it, so adding a field to a model adds both;
:func:`build` turns the values given (by name; ``None`` = not given) back into the models.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.context import ContextSettings
from agent.pool.settings import PoolSettings
from agent.tree.settings import TreeSettings
from environments.acting.environment import OPTIONAL_ACTIONS, optional_names
from environments.acting.observation import DEFAULT_OBSERVATION_CAP
from environments.record.runs import ActorSpec, Budgets, RunMeta

__all__ = ["OPTIONS", "ActorConfig", "Budgets", "Option", "OptionError", "build", "options"]

Kind = Literal["research", "tree", "baseline", "langchain", "replay", "human", "pool"]


class ActorConfig(ActorSpec):
    """One actor, completely: ``make_actor(config)`` builds it, ``run.json`` stores it."""

    model_config = ConfigDict(extra="forbid")

    kind: Kind | None = Field(None, description="research | tree | pool | baseline | langchain | replay "
                              "(default: research when a provider key is set, else baseline)")
    fast_model: str | None = Field(None, description="summaries, Understand File, Reflection "
                                   "(default: the provider's cheap model)")
    edit_model: str | None = Field(None, description="Edit Script (AI) (default: --model)")
    mode: Literal["react", "tools"] = Field("react", description="react (text format) | tools "
                                            "(native tool calls)")
    context: ContextSettings = Field(default_factory=ContextSettings)
    tree: TreeSettings = Field(default_factory=TreeSettings)
    pool: PoolSettings = Field(default_factory=PoolSettings)  # --agent pool (agent.pool)
    observation_cap: int = Field(DEFAULT_OBSERVATION_CAP, ge=100, description=(
        "characters of an observation the actor is shown (head and tail kept; the trace keeps it whole)"))
    actions: str | None = Field(None, description="JSONL actions for --agent replay")
    method_tools: bool = Field(True, description="offer the task's method tools as actions (off: "
                               "the control arm of labcoat uplift)")
    enable_actions: str | None = Field(None, description="also offer these actions, off by "
                                       "default as in MLAgentBench (comma-separated): "
                                       + ", ".join(OPTIONAL_ACTIONS))
    help_answers: str | None = Field(None, description="a file of answers to Request Help, used "
                                     "in order when no person attends (JSON list or JSON Lines)")

    @field_validator("enable_actions")
    @classmethod
    def _known_actions(cls, value: str | None) -> str | None:
        """Spelled as the registry spells them; an unknown name is refused up front."""
        return ", ".join(optional_names(value)) or None

    @classmethod
    def from_meta(cls, meta: RunMeta) -> ActorConfig:
        """The configuration a run stored (resume)."""
        return cls.model_validate(meta.config.model_dump())


# ---- options: one description per field, rendered as a flag and as a widget ---------------

#: flags not spelled after their field (the command line's established names)
FLAGS = {"kind": ("--agent",), "keep_last": ("--keep-steps", "--keep-last")}


#: what a flag's value is, in its help (``--max-time SECONDS``); the rest by type (``N``, ``X``)
METAVARS = {"model": "PROVIDER/MODEL", "fast_model": "PROVIDER/MODEL", "edit_model": "PROVIDER/MODEL",
            "actions": "FILE.jsonl", "enable_actions": "NAMES", "help_answers": "FILE",
            "max_time": "SECONDS", "max_cost": "USD", "max_tokens": "N"}
TYPE_METAVARS = {int: "N", float: "X", str: "TEXT"}


@dataclass(frozen=True)
class Option:
    """One settable field: where it lives, how it is spelled, what it says, what it takes."""

    name: str  # unique over all options: the field's name
    path: tuple[str, ...]  # ("budgets", "max_steps") or ("config", "context", "keep_last")
    type: type  # int | float | str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    group: str = "actor"  # actor | context | tree | budgets

    @property
    def flags(self) -> tuple[str, ...]:
        flag = "--" + self.name.replace("_", "-")
        if self.type is bool:  # both ways, so a default of true can be turned off
            flag = f"{flag}/--no-{flag[2:]}"
        return FLAGS.get(self.name) or (flag,)

    @property
    def metavar(self) -> str:
        """What the flag's value is, as its help shows it: ``react|tools``, ``SECONDS``, ``N``;
        empty for a flag that takes none (``--x/--no-x``)."""
        if self.type is bool:
            return ""
        if self.choices:
            return "|".join(self.choices) if len("|".join(self.choices)) <= 16 else "NAME"
        return METAVARS.get(self.name) or TYPE_METAVARS.get(self.type, "VALUE")

    @property
    def hint(self) -> str:
        """The help with the default, as both the flag and the widget show it."""
        default = "" if self.default is None else f" (default: {self.default})"
        return f"{self.help}{default}"


def _scalar(annotation: Any) -> tuple[type, tuple[str, ...]]:
    """``int | None`` -> (int, ()); ``Literal["a", "b"] | None`` -> (str, ("a", "b"))."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in args if a is not type(None))
        args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        return str, tuple(args)
    return annotation, ()


def _fields(model: type[BaseModel], path: tuple[str, ...], group: str) -> list[Option]:
    out = []
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            # a settings model is a group of its own (context, tree); a model inside one
            # (the tree's policy) stays in its group
            out += _fields(field.annotation, (*path, name), name if len(path) == 1 else group)
            continue
        kind, choices = _scalar(field.annotation)
        default = None if field.default_factory is not None else field.default
        out.append(Option(name, (*path, name), kind, default, field.description or name.replace("_", " "),
                          choices, group))
    return out


OPTIONS: tuple[Option, ...] = (*_fields(ActorConfig, ("config",), "actor"),
                               *_fields(Budgets, ("budgets",), "budgets"))
assert len({o.name for o in OPTIONS}) == len(OPTIONS), "option names must be unique"


def options(exclude: Iterable[str] = ()) -> list[Option]:
    """The options, less ``exclude`` (a batch sets ``model`` and ``seed`` per combination)."""
    skip = set(exclude)
    return [o for o in OPTIONS if o.name not in skip]


def build(values: Mapping[str, Any], actor: ActorConfig | None = None,
          budgets: Budgets | None = None) -> tuple[ActorConfig, Budgets]:
    """The models with the given option values (by name; ``None`` = not given) laid over
    ``actor``/``budgets`` (default: the models' defaults). Text values (the TUI's inputs) are
    converted by the models' own validation; a bad value raises ``pydantic.ValidationError``."""
    by_name = {o.name: o for o in OPTIONS}
    data = {"config": (actor or ActorConfig()).model_dump(), "budgets": (budgets or Budgets()).model_dump()}
    for name, value in values.items():
        if value is None or (isinstance(value, str) and not value.strip()):
            continue  # not given (a blank widget)
        *parents, leaf = by_name[name].path
        target = data
        for p in parents:
            target = target[p]
        target[leaf] = value
    try:
        return ActorConfig.model_validate(data["config"]), Budgets.model_validate(data["budgets"])
    except ValidationError as err:
        raise OptionError(err) from None


class OptionError(ValueError):
    """Bad option values, each named by its flag (what the person typed), not its field path."""

    def __init__(self, err: ValidationError) -> None:
        by_name = {o.name: o for o in OPTIONS}
        lines = []
        for e in err.errors():
            name = next((str(p) for p in reversed(e["loc"]) if str(p) in by_name), None)
            flag = by_name[name].flags[0] if name else ".".join(map(str, e["loc"]))
            lines.append(f"{flag}: {e['msg']} (got {e.get('input')!r})")
        super().__init__("; ".join(lines))
