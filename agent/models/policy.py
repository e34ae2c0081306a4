"""How long a model call may take and when it is tried again: one policy for every HTTP provider.

The SDKs' own retries cannot be bounded in total (a hung server cost 5 x 120 s per call) and do
not cover a 200 response the SDK cannot read (truncated JSON, an empty or HTML body, a body of
the wrong shape), which crashed the run. So the clients are built with ``max_retries=0`` and
:func:`call_with_retries` tries each call itself: a timeout, a dropped connection, 408/409/429/5xx
and malformed responses are tried again (``retry-after`` / ``retry-after-ms`` honoured, else
exponential backoff), within ``max_retries`` and a total ``deadline``; anything else, or the
last failure, becomes one :class:`ModelError` with a one-line reason. The deadline is a hard
one: while a call runs, its :class:`~agent.models.guard.CallGuard` bounds every socket wait of
the SDKs' HTTP client by the time left and cuts a reply past ``max_reply_bytes`` as it is read
(:mod:`agent.models.guard`); a call cut so is not tried again.

Settings (model-string options win over the environment):
``timeout`` / ``LABCOAT_LLM_TIMEOUT`` (seconds an attempt may wait for its answer, 120),
``max_retries`` / ``LABCOAT_LLM_RETRIES`` (4), ``deadline`` / ``LABCOAT_LLM_DEADLINE`` (total
seconds one call may take with its retries and waits, 300), ``max_reply_bytes`` /
``LABCOAT_LLM_MAX_REPLY_BYTES`` (the most a reply body may hold, decompressed, 8 MiB),
``LABCOAT_LLM_BACKOFF`` (the first wait, doubled each retry, 0.5 s).
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic
from pydantic import BaseModel, Field

from agent.models.base import ModelError, Reply, one_line
from agent.models.guard import MAX_REPLY_BYTES, CallCut, CallGuard, guarded

RETRY_STATUS = {408, 409, 429}
REASON_CHARS = 240


class Malformed(ValueError):
    """A response the SDK accepted but that cannot be a reply (no choices, no content, a string)."""


class CallPolicy(BaseModel):
    timeout: float = Field(120.0, gt=0, description="seconds one attempt may wait for its answer")
    max_retries: int = Field(4, ge=0)
    deadline: float = Field(300.0, gt=0, description="total seconds of one call, retries and waits included")
    backoff: float = Field(0.5, ge=0, description="first wait without retry-after; doubles each retry")
    max_backoff: float = Field(30.0, ge=0)
    max_reply_bytes: int = Field(MAX_REPLY_BYTES, gt=0,
                                 description="the most a reply body may hold, decompressed")

    @classmethod
    def from_env(cls, options: dict[str, Any]) -> CallPolicy:
        """The policy from ``options`` (its keys are taken out) over ``LABCOAT_LLM_*``."""
        env = {"timeout": "LABCOAT_LLM_TIMEOUT", "max_retries": "LABCOAT_LLM_RETRIES",
               "deadline": "LABCOAT_LLM_DEADLINE", "backoff": "LABCOAT_LLM_BACKOFF",
               "max_reply_bytes": "LABCOAT_LLM_MAX_REPLY_BYTES"}
        values: dict[str, Any] = {k: os.environ[v] for k, v in env.items() if os.environ.get(v)}
        for key in (*env, "max_backoff"):
            if key in options:
                values[key] = options.pop(key)
        return cls(**values)

    def wait(self, retry: int) -> float:
        """Exponential backoff with jitter (so many clients do not retry in step)."""
        return min(self.max_backoff, self.backoff * 2 ** retry) * (0.5 + random.random() / 2)


@dataclass
class Failure:
    reason: str
    retry: bool
    wait: float | None = None  # what the server asked for (retry-after), else backoff
    connection: bool = False  # the model was not reached (refused, reset, no such host)


def retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    try:
        if ms is not None:
            return max(0.0, float(ms) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return max(0.0, email.utils.mktime_tz(parsed) - time.time()) if parsed else None


def _cut(err: BaseException | None) -> CallCut | None:
    """The guard's :class:`CallCut` behind an SDK's error (they wrap what the HTTP client raised)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, CallCut):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def classify(err: Exception, timeout: float) -> Failure:
    """What a failed attempt means, for both Stainless SDKs (openai, anthropic): same shapes."""
    cut = _cut(err)
    if cut is not None:
        return Failure(str(cut), False)
    name = type(err).__name__
    status = getattr(err, "status_code", None)
    if isinstance(status, int) and hasattr(err, "response"):
        message = getattr(err, "message", "") or str(err)
        return Failure(f"{name} (HTTP {status}): {message}", status in RETRY_STATUS or status >= 500,
                       retry_after(getattr(err.response, "headers", None)))
    if "Timeout" in name:
        return Failure(f"{name}: no answer within {timeout:g} s", True)
    if "Connection" in name:
        cause = err.__cause__ or err.__context__
        return Failure(f"{name}: {type(cause).__name__ + ': ' if cause else ''}{cause or err}", True,
                       connection=True)
    if isinstance(err, (Malformed, json.JSONDecodeError, pydantic.ValidationError, UnicodeError,
                        TypeError, AttributeError, KeyError)) or "ResponseValidation" in name:
        return Failure(f"malformed response ({name}: {err})", True)
    return Failure(f"{name}: {err}", False)


def call_with_retries(label: str, policy: CallPolicy, attempt: Callable[[float], Reply]) -> Reply:
    """``attempt(timeout)`` until it returns, within the policy; its reply, with the retries taken."""
    start = time.monotonic()
    retries = 0
    answered = False  # some try reached the model: a later connection failure is not "unreachable"
    while True:
        left = policy.deadline - (time.monotonic() - start)
        timeout = min(policy.timeout, max(left, 0.05))
        try:
            with guarded(CallGuard(start + policy.deadline, policy.deadline, policy.max_reply_bytes)):
                reply = attempt(timeout)
            reply.retries = retries
            return reply
        except Exception as err:  # noqa: BLE001 - sorted by classify; the rest is re-raised as ModelError
            failure = classify(err, timeout)
        answered = answered or not failure.connection
        unreachable = not answered
        left = policy.deadline - (time.monotonic() - start)
        tries = f"{retries + 1} {'try' if retries == 0 else 'tries'}"
        if not failure.retry:
            raise ModelError(one_line(f"{label}: {failure.reason}", REASON_CHARS),
                             unreachable=unreachable)
        if retries >= policy.max_retries:
            raise ModelError(one_line(f"{label}: {failure.reason} ({tries}, retries spent)", REASON_CHARS),
                             unreachable=unreachable)
        wait = failure.wait if failure.wait is not None else policy.wait(retries)
        if failure.wait is not None and wait > left:
            raise ModelError(one_line(f"{label}: {failure.reason}; its retry-after of {wait:g} s is past "
                                      f"the call's deadline ({left:.0f} s left)", REASON_CHARS),
                             unreachable=unreachable)
        if left - wait < 0.05:
            raise ModelError(one_line(f"{label}: {failure.reason}; the call's deadline of "
                                      f"{policy.deadline:g} s is spent ({tries})", REASON_CHARS),
                             unreachable=unreachable)
        time.sleep(wait)
        retries += 1

