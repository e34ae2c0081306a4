"""Every model call goes through a :class:`Meter`: logged, counted, priced, and redacted.

Each call appends one line to ``<run>/llm/calls.jsonl`` (role, model, prompt, reply, usage --
marked ``estimated`` where the model reported none --, cost, retries, seconds, error) and adds
to ``run.meta.totals``, which the runner's budgets read.
Any value of a credential-like environment variable is replaced by ``***`` before writing:
credential-like by ``sandbox.base.SECRET_NAME``, the one rule the sandbox's env scrub uses too,
so a name the sandbox hides from actors (``DB_PASSWD``, ``X_AUTH``) never reaches a log either.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from agent.models import Model, ModelError, Reply, Usage, secret_values
from environments.runs import RunDir, Totals, now


def redact(text: str, secrets: list[str]) -> str:
    for s in secrets:
        text = text.replace(s, "***")
    return text


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
            raise ModelError(message) from err  # the run's status_reason never holds a key
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
        record = {
            "call": self.calls, "time": now(), "role": role, "model": model,
            "step": self.run.meta.totals.steps + 1 if self.run else None,
            "messages": messages, "tools": [t["name"] for t in tools or []],
            "reply": reply.text if reply else None,
            "tool_calls": [c.model_dump() for c in reply.tool_calls] if reply else [],
            "usage": (reply.usage if reply else Usage()).model_dump(),
            "cost": reply.cost if reply else 0.0, "retries": reply.retries if reply else None,
            "seconds": round(seconds, 3), "error": error,
        }
        line = redact(json.dumps(record, default=str), secret_values())
        with self.path.open("a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
