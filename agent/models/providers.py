"""Every provider's facts in one table, and a model string parsed once into a :class:`ModelRef`.

A model string is ``provider/model[?key=value&...]``. :meth:`ModelRef.parse` is the one place
that splits it; everything else (the client factory, the default and fast models, seeding,
prices, the run manifest) reads the parsed parts and the provider's row of :data:`PROVIDERS`.

A new provider is one :class:`Provider` row here (as ``sandbox/factory.py``'s ``BACKENDS`` is
for backends) and its client class: the row names the class as ``module:Class`` (imported only
when a model of it is built, by the class's ``from_ref(ref, shared)``) and holds its key and
base-URL variables, whether its sampling takes a seed, its default and fast models, and its
prices.
"""

from __future__ import annotations

import importlib
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from agent.models.base import ModelConfigError, Usage

#: US dollars per million tokens: (input, output, cached input)
Price = tuple[float, float, float]
FREE: Mapping[str, Price] = {"": (0.0, 0.0, 0.0)}


@dataclass(frozen=True)
class ModelRef:
    """One parsed model string: ``openai/qwen/qwen3-8b?temperature=0`` is provider ``openai``,
    name ``qwen/qwen3-8b``, options ``{"temperature": 0}`` (values parsed as JSON where they
    parse). ``query`` keeps the options as written, so :attr:`spec` gives the string back."""

    provider: str
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    query: str = ""

    @classmethod
    def parse(cls, spec: str) -> ModelRef:
        """The one place a model string is split; an unknown provider or an empty name is a
        configuration error before anything is built."""
        provider, sep, rest = spec.partition("/")
        name, _, query = rest.partition("?")
        if not sep or not name or provider not in PROVIDERS:
            raise ModelConfigError(
                f"model {spec!r}: write provider/model with provider one of "
                f"{', '.join(p for p, row in PROVIDERS.items() if row.client)} "
                "(or baseline/hparam for the no-LLM agent)")
        options = {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True)}
        return cls(provider, name, options, query)

    @property
    def base(self) -> str:
        """``provider/name``, without the options (what prices and defaults are keyed by)."""
        return f"{self.provider}/{self.name}"

    @property
    def spec(self) -> str:
        return f"{self.base}?{self.query}" if self.query else self.base

    @property
    def row(self) -> Provider:
        return PROVIDERS[self.provider]

    def with_option(self, option: str, value: object) -> ModelRef:
        """This model with ``option=value`` added unless the string sets ``option`` itself
        (what a person wrote always wins)."""
        if option in self.options:
            return self
        query = f"{self.query}&{option}={value}" if self.query else f"{option}={value}"
        return ModelRef(self.provider, self.name, {**self.options, option: _value(str(value))}, query)

    def with_name(self, name: str) -> ModelRef:
        """Another model of the same provider with this one's options (a fast model for a main one)."""
        return ModelRef(self.provider, name, self.options, self.query)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def provider_of(spec: str) -> str:
    """The provider a model string names (no check that it is one): for records such as the
    run manifest, which keep whatever string a run was given."""
    return spec.partition("/")[0]


# ---- the clients -----------------------------------------------------------------------------

def api_key(row: Provider) -> str:
    """The provider's key from its variable; a server at its base URL that takes any key
    (``key_optional_with_base_url``) needs none."""
    key = os.environ.get(row.key_var or "", "")
    if not key and row.key_optional_with_base_url and os.environ.get(row.base_url_var or ""):
        return "not-needed"  # local OpenAI-compatible servers (vLLM, Ollama) take any key
    if not key:
        raise ModelConfigError(f"{row.name} models need {row.key_var} (in the environment or a .env file)")
    return key


def call_policy(ref: ModelRef, options: dict[str, Any]):
    """The HTTP clients' call policy from ``options`` (its keys are taken out) over the
    environment; a bad value is a configuration error naming the model string."""
    from agent.models.policy import CallPolicy

    try:
        return CallPolicy.from_env(options)
    except ValueError as err:
        raise ModelConfigError(f"model {ref.spec!r}: bad timeout, retry, deadline or reply size "
                               f"setting: {err}") from err


class KeyedClient:
    """What an HTTP provider's client class shares: it is made from a parsed model string with
    its provider row's key and base URL; the string's options are the call policy's and the
    API's (``cls(name, api_key=, base_url=, policy=, **options)``)."""

    @classmethod
    def from_ref(cls, ref: ModelRef, shared: dict | None = None):
        options = dict(ref.options)
        policy = call_policy(ref, options)
        return cls(ref.name, api_key=api_key(ref.row), base_url=base_url(ref.row), policy=policy, **options)


def base_url(row: Provider) -> str | None:
    return os.environ.get(row.base_url_var) if row.base_url_var else None


def client_class(row: Provider) -> Any:
    """The provider's client class (``module:Class``, imported only now: an SDK is loaded
    when a model of its provider is built). It is built with ``from_ref(ref, shared)``."""
    if row.client is None:
        raise ModelConfigError(f"{row.name}/... names an agent, not a model")
    module, _, cls = row.client.partition(":")
    return getattr(importlib.import_module(module), cls)


# ---- the table -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Provider:
    """What labcoat knows of one provider."""

    name: str
    client: str | None
    """its client class, ``module:Class``, built by its ``from_ref(ref, shared)`` (``None``:
    the string names an agent, not a model: ``baseline/hparam``)"""
    key_var: str | None = None
    base_url_var: str | None = None
    """set: a local or proxy server, with its own model list (so no default fast model)"""
    key_optional_with_base_url: bool = False
    seeded: bool = False
    """its sampling takes a ``seed`` option (Anthropic's API has none)"""
    default_model: str | None = None
    """``labcoat run``'s model when this provider's key is set (the first such row wins)"""
    fast_model: str | None = None
    """the cheap model for summaries and reading, by default"""
    short_replies: bool = False
    """its default reply length is sized for one ReAct step (a whole script needs more)"""
    prices: Mapping[str, Price] = field(default_factory=dict)
    """by model-name prefix (longest wins); extend in ``$LABCOAT_PRICES``, see :func:`user_prices`"""


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("anthropic", "agent.models.anthropic_model:AnthropicModel", key_var="ANTHROPIC_API_KEY",
             base_url_var="ANTHROPIC_BASE_URL",
             default_model="claude-sonnet-4-5", fast_model="claude-haiku-4-5", prices={
                 "claude-opus-4": (15.00, 75.00, 1.50),
                 "claude-sonnet-4": (3.00, 15.00, 0.30),
                 "claude-3-7-sonnet": (3.00, 15.00, 0.30),
                 "claude-3-5-sonnet": (3.00, 15.00, 0.30),
                 "claude-haiku-4": (1.00, 5.00, 0.10),
                 "claude-3-5-haiku": (0.80, 4.00, 0.08)}),
    Provider("openai", "agent.models.openai_model:OpenAIModel", key_var="OPENAI_API_KEY",
             base_url_var="OPENAI_BASE_URL",
             key_optional_with_base_url=True, seeded=True, default_model="gpt-4o",
             fast_model="gpt-4o-mini", prices={
                 "gpt-4o-mini": (0.15, 0.60, 0.075),
                 "gpt-4o": (2.50, 10.00, 1.25),
                 "gpt-4.1-nano": (0.10, 0.40, 0.025),
                 "gpt-4.1-mini": (0.40, 1.60, 0.10),
                 "gpt-4.1": (2.00, 8.00, 0.50),
                 "gpt-5-mini": (0.25, 2.00, 0.025),
                 "gpt-5": (1.25, 10.00, 0.125),
                 "o3": (2.00, 8.00, 0.50),
                 "o4-mini": (1.10, 4.40, 0.275)}),
    Provider("llamacpp", "agent.models.llamacpp_model:LlamaCppModel", seeded=True, short_replies=True,
             prices=FREE),  # in-process: no bill
    Provider("langchain", "agent.models.langchain_model:LangChainModel"),
    Provider("scripted", "agent.models.scripted:ScriptedModel", seeded=True, prices=FREE),
    Provider("baseline", None, prices=FREE),
)}

#: ``{"openai/gpt-4o": (in, out, cached), ...}``: the table's prices by model-string prefix
PRICES: dict[str, Price] = {f"{p.name}/{prefix}": price for p in PROVIDERS.values()
                            for prefix, price in p.prices.items()}


def key_vars() -> dict[str, str]:
    """``{"openai": "OPENAI_API_KEY", ...}``: the providers that need a key."""
    return {p.name: p.key_var for p in PROVIDERS.values() if p.key_var}


def first_keyed_default() -> tuple[str, str | None] | None:
    """(model, fast model) of the first provider whose key is set, else ``None``."""
    for p in PROVIDERS.values():
        if p.default_model and p.key_var and os.environ.get(p.key_var):
            return f"{p.name}/{p.default_model}", f"{p.name}/{p.fast_model}" if p.fast_model else None
    return None


def default_fast(model: str) -> str:
    """The provider's cheap model for summaries and reading, with the main model's options;
    else (a server at the provider's base URL, a provider without one) the main model itself."""
    try:
        ref = ModelRef.parse(model)
    except ModelConfigError:
        return model
    row = ref.row
    if (row.base_url_var and os.environ.get(row.base_url_var)) or not row.fast_model:
        return model
    return ref.with_name(row.fast_model).spec


# ---- prices ----------------------------------------------------------------------------------

def user_prices() -> dict[str, Price]:
    """Prices from ``$LABCOAT_PRICES`` (TOML or JSON) or ``$LABCOAT_HOME/prices.toml``::

        ["openai/my-model"]
        input = 1.0
        output = 2.0
        cached = 0.5
    """
    path = os.environ.get("LABCOAT_PRICES")
    if not path:
        home = Path(os.environ.get("LABCOAT_HOME", "~/.cache/labcoat")).expanduser()
        path = str(home / "prices.toml")
    p = Path(path)
    if not p.is_file():
        return {}
    text = p.read_text()
    data = json.loads(text) if p.suffix == ".json" else tomllib.loads(text)
    out = {}
    for name, v in data.items():
        if not isinstance(v, dict) or "input" not in v or "output" not in v:
            raise ModelConfigError(f"{p}: price of {name!r} needs input and output ($ per 1M tokens)")
        out[name] = (float(v["input"]), float(v["output"]), float(v.get("cached", v["input"])))
    return out


def price_of(model: str) -> Price | None:
    """The price of the longest matching prefix of the model string (the user's table over
    the providers')."""
    table = {**PRICES, **user_prices()}
    best = max((k for k in table if model.startswith(k)), key=len, default=None)
    return table[best] if best else None


def cost_of(model: str, usage: Usage) -> float:
    """Dollars for one call; 0 for a model without a price (the call log says so)."""
    price = price_of(model)
    if price is None:
        return 0.0
    p_in, p_out, p_cached = price
    fresh = max(0, usage.input - usage.cached)
    return (fresh * p_in + usage.cached * p_cached + usage.output * p_out) / 1e6
