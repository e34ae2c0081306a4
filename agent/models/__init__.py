"""Model strings ``provider/model[?key=value&...]`` -> a :class:`Model`, keys checked up front.

``openai/<model>``, ``anthropic/<model>``, ``llamacpp/<name or .gguf path>``,
``langchain/<module:Class>``, ``scripted/<path>``. (``baseline/hparam`` is an agent, not a
model: see :mod:`agent.factory`.) Options after ``?`` are keyword arguments (``temperature``,
...; values parsed as JSON where they parse); ``timeout``, ``max_retries``, ``deadline`` and
``max_reply_bytes`` set the call policy (:mod:`agent.models.policy`). Keys come from the
providers' usual variables or a ``.env`` file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from agent.models.base import (
    Model,
    ModelConfigError,
    ModelError,
    Reply,
    ToolCall,
    Usage,
    cost_of,
    price_of,
)
from sandbox.base import SECRET_NAME

__all__ = ["Model", "ModelConfigError", "ModelError", "Reply", "ToolCall", "Usage", "cost_of",
           "price_of", "make_model", "parse_model", "load_env", "secret_values", "KEY_VARS"]

PROVIDERS = ("openai", "anthropic", "llamacpp", "langchain", "scripted")
KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def load_env() -> None:
    """Read ``.env`` from the current folder (or above) into the environment, not overriding."""
    from dotenv import find_dotenv, load_dotenv

    path = find_dotenv(usecwd=True)
    if path:
        load_dotenv(path, override=False)


def secret_values() -> list[str]:
    """Values of environment variables that look like credentials (redacted from every log)."""
    return sorted({v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 8},
                  key=len, reverse=True)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_model(spec: str) -> tuple[str, str, dict[str, Any]]:
    """``"openai/gpt-4o?temperature=0"`` -> ``("openai", "gpt-4o", {"temperature": 0})``."""
    provider, sep, rest = spec.partition("/")
    if not sep or not rest or provider not in PROVIDERS:
        raise ModelConfigError(
            f"model {spec!r}: write provider/model with provider one of {', '.join(PROVIDERS)} "
            "(or baseline/hparam for the no-LLM agent)")
    name, _, query = rest.partition("?")
    options = {k: _value(v) for k, v in parse_qsl(query, keep_blank_values=True)}
    return provider, name, options


def _key(provider: str) -> str:
    var = KEY_VARS[provider]
    key = os.environ.get(var, "")
    base_var = f"{provider.upper()}_BASE_URL"
    if not key and provider == "openai" and os.environ.get(base_var):
        return "not-needed"  # local OpenAI-compatible servers (vLLM, Ollama) take any key
    if not key:
        raise ModelConfigError(f"{provider} models need {var} (in the environment or a .env file)")
    return key


def make_model(spec: str, *, shared: dict[str, Model] | None = None) -> Model:
    """Build the client for a model string; ``shared`` reuses one scripted file's instance."""
    load_env()
    provider, name, options = parse_model(spec)
    if provider == "scripted":
        from agent.models.scripted import ScriptedModel

        key = str(Path(name).resolve())
        if shared is not None and key in shared:
            return shared[key]
        model = ScriptedModel(name, seed=int(options.get("seed", 0)))
        if shared is not None:
            shared[key] = model
        return model
    if provider == "langchain":
        from agent.models.langchain_model import LangChainModel

        retries = int(options.pop("labcoat_retries", 2))
        return LangChainModel(name, options, retries=retries)
    if provider == "llamacpp":
        from agent.models.llamacpp_model import LlamaCppModel

        return LlamaCppModel.from_options(name, options)
    from agent.models.policy import CallPolicy

    try:
        policy = CallPolicy.from_env(options)
    except ValueError as err:
        raise ModelConfigError(f"model {spec!r}: bad timeout, retry, deadline or reply size setting: "
                               f"{err}") from err
    if provider == "openai":
        from agent.models.openai_model import OpenAIModel

        return OpenAIModel(name, api_key=_key("openai"), base_url=os.environ.get("OPENAI_BASE_URL"),
                           policy=policy, **options)
    from agent.models.anthropic_model import AnthropicModel

    return AnthropicModel(name, api_key=_key("anthropic"),
                          base_url=os.environ.get("ANTHROPIC_BASE_URL"), policy=policy, **options)
