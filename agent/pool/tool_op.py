"""The pool's method-tool operator: run one of the task's method tools in a node's sandbox,
then let the model write a script that uses what the tool's report showed.

Two halves, because the model lives in the driver and the sandbox on a worker: the driver has
the model pick the tool's arguments (validated by the tool's ``args_model``; its defaults when
the reply holds none that validate), a worker runs the tool in the node's own sandbox
(:func:`run_tool_job`, called by :func:`agent.pool.worker.run_node` for a job with ``tool``),
and the driver shows the model the JSON report and asks for the node's script, which the same
node then runs and is scored with. The job carries the tool's command, not its
:class:`~methods.toolspec.ToolSpec` (whose argument model a Ray worker could not unpickle).
"""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from agent.pool.records import NodeRecord
from environments.acting.tool_actions import MAX_REPORT_BYTES, MAX_REPORT_DEPTH
from environments.untrusted.bounded import LimitError, loads_json
from methods.toolspec import ToolSpec

REPORT_CHARS = 4000  # of a report kept in the node's record and shown to the model
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def tool_args(spec: ToolSpec, reply: str) -> tuple[dict, str]:
    """The arguments a reply names, validated by the tool (``{}``-based defaults when it names
    none that validate), and a note saying which were used; ``ValueError`` when the tool has
    required arguments and the reply gave no valid ones."""
    found = _OBJECT.search(reply or "")
    if found:
        try:
            given = json.loads(found.group(0))
            if isinstance(given, dict):
                return spec.args_model.model_validate(given).model_dump(mode="json"), "the model's"
        except (ValueError, ValidationError):
            pass
    try:
        return spec.args_model().model_dump(mode="json"), "the defaults (the reply gave none valid)"
    except ValidationError as err:
        raise ValueError(f"tool {spec.name}: the model gave no valid arguments and the tool has "
                         f"required ones ({err.error_count()} missing or invalid)") from err


def tool_job(spec: ToolSpec, args: dict) -> dict:
    """What a worker needs to run the tool: its command (no pydantic class) and its input."""
    return {"name": spec.name, "module": spec.module, "entry": spec.entry,
            "payload": json.dumps(args)}


def schema_of(spec: ToolSpec) -> str:
    return json.dumps(spec.args_model.model_json_schema(), indent=1)[:3000]


def run_tool_job(rec: NodeRecord, sandbox, tool: dict, timeout: float) -> NodeRecord:
    """Run the tool in the node's open sandbox (as :func:`environments.acting.tool_actions.run_tool`
    runs one for an action: JSON on stdin, the report on stdout's last line); the record holds
    the report (cut), or fails with why there is none."""
    argv = [sandbox.python, "-m", tool["module"], *([tool["entry"]] if tool.get("entry") else [])]
    rec = rec.model_copy(update={"tool": tool["name"], "tool_args": json.loads(tool["payload"])})
    try:
        result = sandbox.exec(argv, timeout=timeout, stdin=tool["payload"])
    except Exception as err:  # noqa: BLE001 - the node's failure, said
        return rec.model_copy(update={"status": "failed", "reason": f"tool {tool['name']} could "
                                      f"not run: {type(err).__name__}: {err}"[-600:]})
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    try:
        report = loads_json(last, max_bytes=MAX_REPORT_BYTES, max_depth=MAX_REPORT_DEPTH,
                            what=f"tool {tool['name']}'s report")
    except LimitError:
        report = None
    seconds = round(result.seconds, 3)
    if result.timed_out or not isinstance(report, dict):
        why = (f"was killed after {timeout:g} s" if result.timed_out
               else f"failed (exit {result.exit_code}) without a report: {(result.stderr or result.stdout)[-400:]}")
        return rec.model_copy(update={"status": "failed", "reason": f"tool {tool['name']} {why}",
                                      "sandbox_seconds": seconds})
    return rec.model_copy(update={"tool_report": json.dumps(report, indent=1)[:REPORT_CHARS],
                                  "sandbox_seconds": seconds})
