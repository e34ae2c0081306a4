"""What MLAgentBench records of a run besides its trace: the run's arguments and how it ended.

MLAgentBench's ``trace.json`` holds the steps and the research problem, never the run's
command line. That is recorded in two other places of the log folder (``--log-dir``):

* ``LOG_DIR/log``: the runner's output as ``multi_run_experiment.sh`` saves it (``> $folder/$ts/log
  2>&1``). ``runner.py`` prints its ``argparse.Namespace(...)`` to stderr before anything runs,
  then ``Benchmark folder name:``, ``Research problem:`` and, once the agent returns,
  ``Final message:`` lines.
* ``agent_log/agent_<step>_<turn>.json``: the agent's state saved after each of its turns
  (``ResearchAgent`` and the other LLM agents; the plain ``Agent`` of ``baseline.sh`` saves
  none), whose ``args`` are the same arguments as a JSON object.

Both are untrusted text: the Namespace line is parsed as Python literals only (``ast``, never
evaluated), each file read capped through :class:`sandbox.fs.WorkspaceFS` (no link followed).
The log's line wins where both say something; the agent's file fills in what the log lacks
(a log folder copied without its ``log``).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from environments.untrusted.bounded import LimitError, loads_json
from sandbox.fs import WorkspaceError, WorkspaceFS

__all__ = ["final_message", "namespace_args", "read_log", "recorded_args"]

LOG = "log"
AGENT_LOG = "agent_log"
MAX_LOG_BYTES = 4 << 20  # the runner's output: its Namespace line comes in the first lines
MAX_AGENT_BYTES = 32 << 20  # an agent state holds its prompt and history: a few MB at most
MAX_LINE = 64 << 10
_AGENT_FILE = re.compile(r"agent_(\d+)_(\d+)\.json")
_FINAL = re.compile(r"^Final message:\s+(.*)$", re.M)


def read_log(fs: WorkspaceFS) -> str | None:
    """The head of ``LOG_DIR/log`` (capped), or None where there is no regular file."""
    return _read_text(fs, LOG, MAX_LOG_BYTES)


def _read_text(fs: WorkspaceFS, rel: str, cap: int) -> str | None:
    if fs.kind(rel) != "file":
        return None
    try:
        data, _ = fs.read(rel, cap)
    except WorkspaceError:
        return None
    return data.decode(errors="replace")


def namespace_args(text: str) -> dict[str, Any] | None:
    """The keywords of the first ``Namespace(...)`` line of ``text`` whose values are all
    literals (strings, numbers, lists, ``None``...), or None. Nothing is evaluated."""
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("Namespace(") or len(line) > MAX_LINE:
            continue
        try:
            call = ast.parse(line, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            continue
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "Namespace" and not call.args):
            continue
        try:
            return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except (ValueError, TypeError, SyntaxError, RecursionError):
            continue
    return None


def _agent_args(fs: WorkspaceFS) -> dict[str, Any] | None:
    """``args`` of the agent's latest saved state (``agent_log/agent_<step>_<turn>.json``)."""
    try:
        entries = fs.listdir(AGENT_LOG) if fs.kind(AGENT_LOG) == "dir" else []
    except WorkspaceError:
        return None
    numbered = sorted(((int(m[1]), int(m[2])), e.name) for e in entries
                      if e.kind == "file" and (m := _AGENT_FILE.fullmatch(e.name)))
    for _, name in reversed(numbered):
        text = _read_text(fs, f"{AGENT_LOG}/{name}", MAX_AGENT_BYTES + 1)
        if text is None or len(text) > MAX_AGENT_BYTES:
            continue
        try:
            state = loads_json(text.encode(), max_bytes=MAX_AGENT_BYTES, max_depth=64, what=name)
        except (LimitError, ValueError):
            continue
        if isinstance(state, dict) and isinstance(state.get("args"), dict):
            return state["args"]
    return None


def recorded_args(fs: WorkspaceFS | None, log_text: str | None) -> tuple[dict[str, Any], list[str]]:
    """The run's arguments as MLAgentBench recorded them, and where they were read
    (``["log", "agent_log/…"]``); ``({}, [])`` where it recorded none."""
    found: dict[str, Any] = {}
    where: list[str] = []
    from_agent = _agent_args(fs) if fs is not None else None
    if from_agent:
        found.update(from_agent)
        where.append(f"{AGENT_LOG}/agent_*.json")
    from_log = namespace_args(log_text) if log_text else None
    if from_log:
        found.update(from_log)  # the command line as given wins over the agent's copy
        where.insert(0, LOG)
    return found, where


def final_message(log_text: str | None) -> str | None:
    """What the agent's ``run`` returned (``Final message:`` of the runner's output)."""
    if not log_text:
        return None
    found = _FINAL.findall(log_text)
    return found[-1].strip()[:500] if found else None
