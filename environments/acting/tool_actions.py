"""Method tools as actions: the registry's metadata in, ``python -m`` in the sandbox out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial

from environments.acting.actions import ActionContext, ActionFailed, ActionSpec
from environments.acting.observation import Observation
from environments.untrusted.bounded import LimitError, loads_json
from methods.registry import UnknownToolError, get_tool
from methods.toolspec import ToolSpec

MAX_REPORT_BYTES = 8 << 20  # a report is printed by sandboxed code: parsed only when bounded
MAX_REPORT_DEPTH = 64


def run_tool(spec: ToolSpec, ctx: ActionContext, args) -> Observation:
    """Run one tool with validated arguments; the whole JSON report goes into ``data``."""
    payload = args.model_dump_json()
    result = ctx.sandbox.exec(spec.argv(ctx.sandbox.python), timeout=ctx.task.limits.exec_timeout,
                              stdin=payload)
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    try:
        report = loads_json(last, max_bytes=MAX_REPORT_BYTES, max_depth=MAX_REPORT_DEPTH,
                            what=f"tool {spec.name}'s report")
    except LimitError:  # too large, too deep or no JSON: the tool failed without a report
        report = None
    if result.timed_out:
        raise ActionFailed(f"tool {spec.name} was killed after {ctx.task.limits.exec_timeout:g} s")
    if result.oom_killed:
        raise ActionFailed(f"tool {spec.name} ran out of memory ({ctx.task.limits.memory_mb} MB)")
    if not isinstance(report, dict):
        tail = (result.stderr or result.stdout)[-2000:]
        raise ActionFailed(f"tool {spec.name} failed (exit {result.exit_code}) without a report:\n{tail}")
    text = json.dumps(report, indent=1)
    return ctx.observe(text, exit_code=result.exit_code, seconds=result.seconds,
                       error=result.exit_code != 0 or "error" in report, data=report)


def tool_specs(names: Sequence[str]) -> tuple[dict[str, ToolSpec], list[str]]:
    """The registry's tools a task names, and why a name is none (a task.toml names tools as
    text): what an actor that runs tools itself (the pool's tool operator) gets, without
    reaching into the methods' registry from the agent room."""
    found: dict[str, ToolSpec] = {}
    missing: list[str] = []
    for name in names:
        try:
            found[name] = get_tool(name)
        except UnknownToolError as err:
            missing.append(f"{name}: {err}")
    return found, missing


def tool_action(name: str, spec: ToolSpec | None = None) -> ActionSpec:
    """The action for a registry tool (or for a given spec, e.g. a test's own tool)."""
    spec = spec or get_tool(name)
    return ActionSpec(spec.name, spec.description, spec.args_model, partial(run_tool, spec), kind="tool")
