"""Every model call goes through a :class:`Meter`: logged, counted, priced, and redacted.

Each call appends one line to ``<run>/llm/calls.jsonl`` (role, model, prompt, reply, usage --
marked ``estimated`` where the model reported none --, cost, retries, seconds, error) and adds
to ``run.meta.totals``, which the runner's budgets read.
Any value of a credential-like environment variable is replaced by ``***`` before writing:
credential-like by ``sandbox.base.SECRET_NAME``, the one rule the sandbox's env scrub uses too,
so a name the sandbox hides from actors (``DB_PASSWD``, ``X_AUTH``) never reaches a log either.
A line is bounded: each prompt message, the reply, each tool call's arguments and the error keep
at most ``TEXT_CHARS`` characters (head and tail, around a marker that gives the whole length),
and all of one call's texts together at most ``CALL_CHARS``, so a flood of a reply or of an
observation in the prompt cannot fill the disk through the log (redacted before cut, so a cut
never leaves part of a key).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from agent.models import Model, ModelError, Reply, Usage, secret_values
from environments.record.runs import RunDir, Totals, now

TEXT_CHARS = 256 << 10  # characters of one logged text (a prompt message, the reply)
CALL_CHARS = 1 << 20  # characters of all of one call's logged texts


def redact(text: str, secrets: list[str]) -> str:
    for s in secrets:
        text = text.replace(s, "***")
    return text


def clip(text: str, cap: int, whole: int | None = None) -> str:
    """``text`` whole when it fits ``cap``, else its head and tail around a marker that gives
    its length (``whole``: the length before redaction, what the model or agent produced)."""
    if len(text) <= cap:
        return text
    half = cap // 2
    return (f"{text[:half]}\n[... truncated for the call log: {whole or len(text)} characters in all, "
            f"{2 * half} kept ...]\n{text[len(text) - half:] if half else ''}")


class _Budget:
    """What is left of one call's ``CALL_CHARS``; each text redacted, then clipped to it."""

    def __init__(self, secrets: list[str]) -> None:
        self.left = CALL_CHARS
        self.secrets = secrets

    def text(self, text: str) -> str:
        whole = len(text)
        text = redact(text, self.secrets)
        cap = min(TEXT_CHARS, self.left)
        self.left -= min(len(text), cap)
        return clip(text, cap, whole)

    def value(self, value: Any) -> Any:
        """A JSON value (a message's content, a tool call's arguments) kept as it is when it
        fits, else as its clipped JSON text."""
        if isinstance(value, str):
            return self.text(value)
        dumped = json.dumps(value, default=str)
        if len(dumped) <= min(TEXT_CHARS, self.left):
            self.left -= len(dumped)
            return value
        return self.text(dumped)


class Meter:
    def __init__(self, run: RunDir | None) -> None:
        self.run = run
        self.totals = run.meta.totals if run else Totals()
        self.path = run.log_dir("llm") / "calls.jsonl" if run else None
        self.calls = 0

    def call(self, model: Model, messages: list[dict[str, Any]], *, role: str,
             tools: list[dict[str, Any]] | None = None, **options: Any) -> Reply:
        """One metered call; :class:`ModelError` (logged first) when it fails for good.
        ``options`` go to models that take them (``grammar=`` for llama.cpp)."""
        start = time.perf_counter()
        try:
            reply = model.complete(messages, tools=tools, **options)
        except ModelError as err:
            message = redact(str(err), secret_values())
            self._log(model.name, role, messages, tools, None, time.perf_counter() - start, message)
            raise ModelError(message, unreachable=err.unreachable) from err  # no key in status_reason
        self.record(model.name, role, messages, tools, reply, time.perf_counter() - start)
        return reply

    def record(self, model: str, role: str, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]] | None, reply: Reply, seconds: float) -> None:
        """Count and log a call made elsewhere (the LangChain agent calls its model itself)."""
        t = self.totals
        t.llm_calls += 1
        t.retries += reply.retries
        t.tokens_in += reply.usage.input
        t.tokens_out += reply.usage.output
        t.tokens_cached += reply.usage.cached
        t.cost = round(t.cost + reply.cost, 6)
        self._log(model, role, messages, tools, reply, seconds, None)

    def _log(self, model: str, role: str, messages, tools, reply: Reply | None,
             seconds: float, error: str | None) -> None:
        self.calls += 1
        if self.path is None:
            return
        secrets = secret_values()
        budget = _Budget(secrets)  # the reply first: it is what a replay of the log reads
        text = budget.text(reply.text) if reply else None
        calls = ([{**c.model_dump(), "arguments": budget.value(c.arguments)} for c in reply.tool_calls]
                 if reply else [])
        error = budget.text(error) if error is not None else None
        record = {
            "call": self.calls, "time": now(), "role": role, "model": model,
            "step": self.run.meta.totals.steps + 1 if self.run else None,
            "messages": [{**m, "content": budget.value(m.get("content", ""))} for m in messages],
            "tools": [t["name"] for t in tools or []],
            "reply": text, "tool_calls": calls,
            "usage": (reply.usage if reply else Usage()).model_dump(),
            "cost": reply.cost if reply else 0.0, "retries": reply.retries if reply else None,
            "seconds": round(seconds, 3), "error": error,
        }
        line = redact(json.dumps(record, default=str), secrets)
        with self.path.open("a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
