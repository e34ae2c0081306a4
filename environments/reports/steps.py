"""Per-step wall-clock and tokens of a run, for anytime curves (reading only).

Two other rooms' files are read here and nowhere else in reports: the trace (``trace.jsonl``,
the :class:`environments.record.runs.Step` lines) and the agent's call log (``llm/calls.jsonl``,
``agent/calllog.py``). Both are read through fast paths that skip decoding observations and
prompts, falling back to a whole parse for any line they do not recognise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any


def _elapsed(start: str, stamp: str) -> float | None:
    try:
        return max(0.0, (datetime.fromisoformat(stamp) - datetime.fromisoformat(start)).total_seconds())
    except (TypeError, ValueError):
        return None


def _json_lines(path: Path) -> Iterable[bytes]:
    """The lines of a JSONL file, read only (a report never trims a run that may be running)."""
    if not path.is_file():
        return
    with path.open("rb") as f:
        yield from f


def _loads(line: bytes) -> dict[str, Any]:
    """One line's object, or ``{}`` for a torn or foreign line (skipped, not an error)."""
    try:
        item = json.loads(line)
    except ValueError:
        return {}
    return item if isinstance(item, dict) else {}


# Fast paths: a trace line starts with its index and time (the Step model's field order) and a
# call-log line names its step before the prompt (agent/calllog.py). A JSON string escapes every
# quote, so these byte patterns cannot occur inside a prompt or an observation; a line that does
# not match (another writer's order) is parsed whole. Reading a 1,000-step run's curve this way
# skips decoding megabytes of observations and prompts.
_TRACE_HEAD = re.compile(rb'\{"index":(\d+),"time":"([^"]*)"')
_CALL_STEP = re.compile(rb'"step": (\d+), "messages"')
_CALL_USAGE = re.compile(rb'"usage": \{"input": (\d+), "output": (\d+)')


def read_step_times(path: Path, start: str) -> dict[int, float]:
    """step -> seconds from ``start`` to the step's trace line.

    Wall clock as a person lives it: a human's thinking time counts, as in RE-Bench's time
    budgets. Steps a fork inherited happened in the parent, before this run started: left out.
    """
    out: dict[int, float] = {}
    for line in _json_lines(path / "trace.jsonl"):
        head = _TRACE_HEAD.match(line)
        if head and b'"inherited":true' not in line and line.endswith(b"}\n"):
            index, stamp = int(head[1]), head[2].decode()
        else:
            item = _loads(line)
            if item.get("inherited") or not isinstance(item.get("index"), int):
                continue
            index, stamp = item["index"], item.get("time")
        seconds = _elapsed(start, stamp)
        if seconds is not None:
            out[index] = seconds
    return out


def read_step_tokens(path: Path) -> dict[int, int]:
    """step -> tokens (prompt + reply) of all model calls up to and including that step,
    from ``llm/calls.jsonl`` (each call records the step it was made for)."""
    per_step: dict[int, int] = {}
    for line in _json_lines(path / "llm" / "calls.jsonl"):
        step = _CALL_STEP.search(line, 0, 4096)
        usage = _CALL_USAGE.search(line, max(0, line.rfind(b'"usage": {'))) if step else None
        if step and usage and line.endswith(b"}\n"):
            index, tokens = int(step[1]), int(usage[1]) + int(usage[2])
        else:
            item = _loads(line)
            index, got = item.get("step"), item.get("usage") or {}
            if not isinstance(index, int):
                continue
            tokens = int(got.get("input", 0)) + int(got.get("output", 0))
        per_step[index] = per_step.get(index, 0) + tokens
    total, out = 0, {}
    for step in sorted(per_step):
        total += per_step[step]
        out[step] = total
    return out
