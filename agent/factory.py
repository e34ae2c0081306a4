"""Building an actor from its :class:`agent.config.ActorConfig`.

With no agent and no model: the research agent on a default model when a provider key is set,
else the no-LLM baseline (``baseline/hparam``), so ``labcoat run TASK`` works offline.
``--agent tree`` is the solution-tree search (:mod:`agent.tree`) on the main model alone.
Every configuration error (unknown agent, bad model string, missing key) is raised here,
before the run starts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent.actor import Actor
from agent.config import ActorConfig
from agent.replay import ReplayActor

AGENTS = ("research", "tree", "baseline", "langchain", "replay")
DEFAULTS = {  # provider key -> (model, fast model)
    "ANTHROPIC_API_KEY": ("anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5"),
    "OPENAI_API_KEY": ("openai/gpt-4o", "openai/gpt-4o-mini"),
}


class AgentConfigError(ValueError):
    """A choice of agent or model that cannot work; raised before the run starts."""


def default_model() -> tuple[str, str | None]:
    from agent.models import load_env

    load_env()
    for var, (model, fast) in DEFAULTS.items():
        if os.environ.get(var):
            return model, fast
    return "baseline/hparam", None


def resolve_choice(agent: str | None, model: str | None, actions: Path | str | None) -> tuple[str, str | None]:
    """(agent, model) after defaults: what run.json records."""
    if agent is None and actions is not None:
        return "replay", None
    if agent in (None, "research", "tree", "baseline") and model is None:
        model = "baseline/hparam" if agent == "baseline" else default_model()[0]
    if agent is None:
        agent = "baseline" if model.startswith("baseline/") else "research"
    if agent not in AGENTS:
        raise AgentConfigError(f"unknown agent {agent!r}; available: {', '.join(AGENTS)}")
    return agent, model


def resolve(config: ActorConfig) -> ActorConfig:
    """``config`` with its kind and model chosen (the defaults above): what run.json stores."""
    kind, model = resolve_choice(config.kind, config.model, config.actions)
    return config.model_copy(update={"kind": kind, "model": model})


#: providers whose sampling takes a seed option (Anthropic's API has none)
SEEDED = ("openai", "llamacpp", "scripted")


def seeded(model: str, seed: int) -> str:
    """The model string with the run's seed as its ``seed`` option, where the provider takes
    one and the string does not set it already."""
    return with_default(model, "seed", seed, SEEDED)


def with_default(model: str, option: str, value: object, providers: tuple[str, ...]) -> str:
    """``model`` with ``option=value`` added when its provider is one of ``providers`` and the
    string does not set that option itself (what a person wrote always wins)."""
    from urllib.parse import parse_qsl

    provider, _, rest = model.partition("/")
    if provider not in providers or option in dict(parse_qsl(rest.partition("?")[2])):
        return model
    return f"{model}{'&' if '?' in model else '?'}{option}={value}"


def make_actor(config: ActorConfig | str | None = None, **fields: Any) -> Actor:
    """The actor ``config`` describes (see the module docstring for the defaults).

    ``make_actor("research", model=M)`` is short for ``make_actor(ActorConfig(kind="research",
    model=M))``; an unknown field is an error, never ignored.
    """
    from agent.models import ModelConfigError, make_model

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
        name, _, query = (model or "baseline/hparam").partition("?")
        if name != "baseline/hparam":
            raise AgentConfigError(f"the baseline agent takes no model (got {model!r}); "
                                   "the only baseline is baseline/hparam[?max_seconds=S]")
        from urllib.parse import parse_qsl

        from agent.baseline import HParamAgent

        opts = dict(parse_qsl(query))
        unknown = set(opts) - {"max_seconds"}
        if unknown:
            raise AgentConfigError(f"baseline/hparam takes only max_seconds (got {', '.join(unknown)})")
        return HParamAgent(max_seconds=float(opts.get("max_seconds", 270)), seed=config.seed)
    if agent == "human":
        raise AgentConfigError("the human actor is the TUI's; it is not built here")
    try:
        if agent == "langchain":
            from agent.langchain_agent import LangChainAgent
            from agent.models.langchain_model import LangChainModel

            main = make_model(model)
            if not isinstance(main, LangChainModel):
                raise AgentConfigError("--agent langchain needs --model langchain/<module:Class>?...")
            return LangChainAgent(main)
        if model.startswith("baseline/"):
            raise AgentConfigError(f"{model} is the no-LLM agent; use it without --agent {agent}")
        if agent == "tree":
            from agent.tree.agent import TreeAgent

            main = make_model(seeded(whole_scripts(model), config.seed))
            return TreeAgent(main, config.tree, format_retries=config.context.format_retries)
        from agent.research import ResearchAgent

        shared: dict = {}
        main = make_model(seeded(model, config.seed), shared=shared)
        fast = make_model(seeded(config.fast_model or default_fast(model), config.seed), shared=shared)
        edit = make_model(seeded(config.edit_model, config.seed), shared=shared) if config.edit_model else main
        return ResearchAgent(main, fast, edit, mode=config.mode, settings=config.context)
    except ModelConfigError as err:
        raise AgentConfigError(str(err)) from err


#: the tree agent's reply is a whole solve script: the local model's default reply length (768
#: tokens, sized for one ReAct step) cuts a script off, so its nodes ask for this many
TREE_MAX_TOKENS = 1400


def whole_scripts(model: str) -> str:
    """``model`` with room for a whole script in one reply: the llama.cpp model gets
    ``max_tokens=TREE_MAX_TOKENS`` unless its string sets ``max_tokens`` (other providers'
    defaults already hold a script)."""
    return with_default(model, "max_tokens", TREE_MAX_TOKENS, ("llamacpp",))


def default_fast(model: str) -> str:
    """The provider's cheap model for summaries and reading; else the main model itself."""
    provider = model.split("/")[0]
    if os.environ.get(f"{provider.upper()}_BASE_URL"):
        return model  # a local or proxy server: its own model list
    for _, (main, fast) in DEFAULTS.items():
        if provider == main.split("/")[0]:
            return fast + model[len(model.split("?")[0]):]  # keep the main model's options
    return model
