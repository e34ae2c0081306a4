"""Building an actor from its :class:`agent.config.ActorConfig`.

With no agent and no model: the research agent on a default model when a provider key is set,
else the no-LLM baseline (``baseline/hparam``), so ``labcoat run TASK`` works offline.
``--agent tree`` is the solution-tree search (:mod:`agent.tree`) on the main model alone.
Every configuration error (unknown agent, bad model string, missing key) is raised here,
before the run starts.
"""

from __future__ import annotations

from collections.abc import Callable
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
    if agent == "human":  # a person acts through the TUI's forms: no model
        return agent, None
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
    """The actor ``config`` describes (see the module docstring for the defaults), built by
    its kind's row of :data:`BUILDERS`.

    ``make_actor("research", model=M)`` is short for ``make_actor(ActorConfig(kind="research",
    model=M))``; an unknown field is an error, never ignored.
    """
    if not isinstance(config, ActorConfig):
        try:
            config = ActorConfig(kind=config, **{k: str(v) if isinstance(v, Path) else v
                                                 for k, v in fields.items()})
        except ValueError as err:
            raise AgentConfigError(str(err)) from err
    elif fields:
        raise AgentConfigError("make_actor takes an ActorConfig or fields, not both")
    config = resolve(config)
    try:
        return BUILDERS[config.kind](config)
    except ModelConfigError as err:
        raise AgentConfigError(str(err)) from err


def _model(config: ActorConfig) -> ModelRef:
    """The config's main model, parsed once here; an agent that needs one and has none is told."""
    if config.model is None:
        raise AgentConfigError(f"--agent {config.kind} needs --model")
    ref = parsed(config.model)
    if ref.provider == "baseline" and config.kind != "baseline":
        raise AgentConfigError(f"{config.model} is the no-LLM agent; use it without --agent {config.kind}")
    return ref


def _replay(config: ActorConfig) -> Actor:
    if config.actions is None:
        raise AgentConfigError("--agent replay needs --actions FILE.jsonl")
    return ReplayActor.from_file(Path(config.actions))


def _human(config: ActorConfig) -> Actor:
    """A person at the TUI: proposals come from its forms (``agent.human``)."""
    from agent.human import HumanActor

    return HumanActor()


def _langchain(config: ActorConfig) -> Actor:
    from agent.langchain_agent import LangChainAgent
    from agent.models import make_model
    from agent.models.langchain_model import LangChainModel

    main = make_model(_model(config))
    if not isinstance(main, LangChainModel):
        raise AgentConfigError("--agent langchain needs --model langchain/<module:Class>?...")
    return LangChainAgent(main)


def _tree(config: ActorConfig) -> Actor:
    from agent.models import make_model
    from agent.tree.agent import TreeAgent

    main = make_model(seeded(whole_scripts(_model(config)), config.seed))
    return TreeAgent(main, config.tree, format_retries=config.context.format_retries)


def _pool(config: ActorConfig) -> Actor:
    """The research pool (:mod:`agent.pool`): with no model (or the baseline's name) its
    operators change the task's declared knobs; with one, the model -- built once, here, for
    the driver: workers never load it -- writes every node's script."""
    from agent.models import make_model
    from agent.pool.agent import PoolAgent
    from agent.pool_model import ModelOperators

    ops = None
    if config.model is not None and parsed(config.model).base != BASELINE:
        model = make_model(seeded(whole_scripts(_model(config)), config.seed))
        ops = ModelOperators(model, format_retries=config.context.format_retries)
    return PoolAgent(config.pool, select_top_k=config.tree.select_top_k, seed=config.seed, ops=ops)


def _research(config: ActorConfig) -> Actor:
    from agent.models import make_model
    from agent.research import ResearchAgent

    ref, shared = _model(config), {}
    fast_ref = (parsed(config.fast_model, "--fast-model") if config.fast_model
                else parsed(default_fast(config.model)))
    main = make_model(seeded(ref, config.seed), shared=shared)
    fast = make_model(seeded(fast_ref, config.seed), shared=shared)
    edit = (make_model(seeded(parsed(config.edit_model, "--edit-model"), config.seed), shared=shared)
            if config.edit_model else main)
    return ResearchAgent(main, fast, edit, mode=config.mode, settings=config.context)


BUILDERS: dict[str, Callable[[ActorConfig], Actor]] = {
    "research": _research,
    "tree": _tree,
    "pool": _pool,
    "baseline": lambda config: _baseline(config.model or BASELINE, config.seed),
    "langchain": _langchain,
    "replay": _replay,
    "human": _human,
}
"""Each actor kind's builder: a new kind of agent is one row (and one ``Kind`` literal)."""
AGENTS = tuple(kind for kind in BUILDERS if kind != "human")
"""The kinds a command line may name (a person acts through the TUI)."""


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
