"""Building an actor from its :class:`agent.config.ActorConfig`.

With no agent and no model: the research agent on a default model when a provider key is set,
else the no-LLM baseline (``baseline/hparam``), so ``labcoat run TASK`` works offline.
``--agent tree`` is the solution-tree search (:mod:`agent.tree`) on the main model alone.
Every configuration error (unknown agent, bad model string, missing key) is raised here,
before the run starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.actor import Actor
from agent.config import ActorConfig
from agent.models.base import ModelConfigError
from agent.models.providers import (
    ModelRef,
    default_fast,
    first_keyed_default,
    provider_of,
)
from agent.replay import ReplayActor

AGENTS = ("research", "tree", "baseline", "langchain", "replay")
BASELINE = "baseline/hparam"


class AgentConfigError(ValueError):
    """A choice of agent or model that cannot work; raised before the run starts."""


def default_model() -> tuple[str, str | None]:
    """(model, fast model) of the first provider whose key is set (:data:`PROVIDERS` order),
    else the no-LLM baseline."""
    from agent.models import load_env

    load_env()
    return first_keyed_default() or (BASELINE, None)


def resolve_choice(agent: str | None, model: str | None, actions: Path | str | None) -> tuple[str, str | None]:
    """(agent, model) after defaults: what run.json records."""
    if agent is None and actions is not None:
        return "replay", None
    if agent in (None, "research", "tree", "baseline") and model is None:
        model = BASELINE if agent == "baseline" else default_model()[0]
    if agent is None:
        agent = "baseline" if provider_of(model) == "baseline" else "research"
    if agent not in AGENTS:
        raise AgentConfigError(f"unknown agent {agent!r}; available: {', '.join(AGENTS)}")
    return agent, model


def resolve(config: ActorConfig) -> ActorConfig:
    """``config`` with its kind and model chosen (the defaults above): what run.json stores."""
    kind, model = resolve_choice(config.kind, config.model, config.actions)
    return config.model_copy(update={"kind": kind, "model": model})


def seeded(ref: ModelRef, seed: int) -> ModelRef:
    """The model with the run's seed as its ``seed`` option, where the provider takes one
    (``Provider.seeded``) and the string does not set it already."""
    return ref.with_option("seed", seed) if ref.row.seeded else ref


def parsed(model: str, what: str = "--model") -> ModelRef:
    """A model string validated once, at the edge: everything after passes the ``ModelRef``."""
    try:
        return ModelRef.parse(model)
    except ModelConfigError as err:
        raise AgentConfigError(f"{what}: {err}") from err


def make_actor(config: ActorConfig | str | None = None, **fields: Any) -> Actor:
    """The actor ``config`` describes (see the module docstring for the defaults).

    ``make_actor("research", model=M)`` is short for ``make_actor(ActorConfig(kind="research",
    model=M))``; an unknown field is an error, never ignored.
    """
    from agent.models import make_model

    if not isinstance(config, ActorConfig):
        try:
            config = ActorConfig(kind=config, **{k: str(v) if isinstance(v, Path) else v
                                                 for k, v in fields.items()})
        except ValueError as err:
            raise AgentConfigError(str(err)) from err
    elif fields:
        raise AgentConfigError("make_actor takes an ActorConfig or fields, not both")
    config = resolve(config)
    agent, model = config.kind, config.model
    if agent == "replay":
        if config.actions is None:
            raise AgentConfigError("--agent replay needs --actions FILE.jsonl")
        return ReplayActor.from_file(Path(config.actions))
    if agent == "baseline":
        return _baseline(model or BASELINE, config.seed)
    if agent == "human":
        raise AgentConfigError("the human actor is the TUI's; it is not built here")
    if model is None:
        raise AgentConfigError(f"--agent {agent} needs --model")
    ref = parsed(model)
    try:
        if agent == "langchain":
            from agent.langchain_agent import LangChainAgent
            from agent.models.langchain_model import LangChainModel

            main = make_model(ref)
            if not isinstance(main, LangChainModel):
                raise AgentConfigError("--agent langchain needs --model langchain/<module:Class>?...")
            return LangChainAgent(main)
        if ref.provider == "baseline":
            raise AgentConfigError(f"{model} is the no-LLM agent; use it without --agent {agent}")
        if agent == "tree":
            from agent.tree.agent import TreeAgent

            main = make_model(seeded(whole_scripts(ref), config.seed))
            return TreeAgent(main, config.tree, format_retries=config.context.format_retries)
        from agent.research import ResearchAgent

        shared: dict = {}
        fast_ref = parsed(config.fast_model, "--fast-model") if config.fast_model else parsed(default_fast(model))
        main = make_model(seeded(ref, config.seed), shared=shared)
        fast = make_model(seeded(fast_ref, config.seed), shared=shared)
        edit = (make_model(seeded(parsed(config.edit_model, "--edit-model"), config.seed), shared=shared)
                if config.edit_model else main)
        return ResearchAgent(main, fast, edit, mode=config.mode, settings=config.context)
    except ModelConfigError as err:
        raise AgentConfigError(str(err)) from err


#: the tree agent's reply is a whole solve script: the local model's default reply length (768
#: tokens, sized for one ReAct step) cuts a script off, so its nodes ask for this many
TREE_MAX_TOKENS = 1400


def whole_scripts(ref: ModelRef) -> ModelRef:
    """``ref`` with room for a whole script in one reply: a provider whose default reply is
    sized for one ReAct step (``Provider.short_replies``: the llama.cpp model) gets
    ``max_tokens=TREE_MAX_TOKENS`` unless its string sets ``max_tokens`` (other providers'
    defaults already hold a script)."""
    return ref.with_option("max_tokens", TREE_MAX_TOKENS) if ref.row.short_replies else ref


def _baseline(model: str, seed: int) -> Actor:
    """The no-LLM agent: ``baseline/hparam[?max_seconds=S]`` and nothing else."""
    from agent.baseline import HParamAgent

    try:
        ref = ModelRef.parse(model)
    except ModelConfigError:
        ref = None
    if ref is None or ref.base != BASELINE:
        raise AgentConfigError(f"the baseline agent takes no model (got {model!r}); "
                               f"the only baseline is {BASELINE}[?max_seconds=S]")
    unknown = set(ref.options) - {"max_seconds"}
    if unknown:
        raise AgentConfigError(f"{BASELINE} takes only max_seconds (got {', '.join(unknown)})")
    return HParamAgent(max_seconds=float(ref.options.get("max_seconds", 270)), seed=seed)
