"""Model strings ``provider/model[?key=value&...]`` -> a :class:`Model`, keys checked up front.

``openai/<model>``, ``anthropic/<model>``, ``llamacpp/<name or .gguf path>``,
``langchain/<module:Class>``, ``scripted/<path>``. (``baseline/hparam`` is an agent, not a
model: see :mod:`agent.factory`.) Options after ``?`` are keyword arguments (``temperature``,
...; values parsed as JSON where they parse); ``timeout``, ``max_retries``, ``deadline`` and
``max_reply_bytes`` set the call policy (:mod:`agent.models.policy`). Keys come from the
providers' usual variables or a ``.env`` file. What each provider is (client, key and base-URL
variables, seed, default and fast models, prices) is one row of
:data:`agent.models.providers.PROVIDERS`; the string is parsed once, into a ``ModelRef``.
"""

from __future__ import annotations

import os

from agent.models.base import (
    Model,
    ModelConfigError,
    ModelError,
    Reply,
    ToolCall,
    Usage,
)
from agent.models.providers import (
    PROVIDERS,
    ModelRef,
    Provider,
    client_class,
    cost_of,
    key_vars,
    price_of,
)
from sandbox.base import SECRET_NAME

__all__ = ["Model", "ModelConfigError", "ModelError", "ModelRef", "PROVIDERS", "Provider", "Reply",
           "ToolCall", "Usage", "cost_of", "price_of", "make_model", "load_env", "secret_values",
           "key_vars"]


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


def make_model(spec: str | ModelRef, *, shared: dict[str, Model] | None = None) -> Model:
    """Build the client for a model string (its provider's factory, :data:`PROVIDERS`);
    ``shared`` reuses one scripted file's instance."""
    load_env()
    ref = spec if isinstance(spec, ModelRef) else ModelRef.parse(spec)
    if ref.row.client is None:
        raise ModelConfigError(f"{ref.spec} is the no-LLM agent, not a model")
    return client_class(ref.row).from_ref(ref, shared)
