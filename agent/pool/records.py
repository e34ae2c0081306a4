"""A pool node as the run records it: the ``data`` of its ``Record Node`` step.

The trace is the population: a resumed pool, ``labcoat report tree`` and the TUI all rebuild
the nodes from these steps (:func:`nodes_of`), so they never disagree with what was recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from environments.acting.pool_node import RECORD_NODE
from environments.record.runs import Step

Value = int | float | str  # a knob's value (agent.baseline.Value)
Operator = Literal["start", "draft", "improve", "crossover", "debug", "tool"]
Status = Literal["ok", "failed", "lost"]


class NodeRecord(BaseModel):
    """One candidate: where it came from, who ran it, when, what it cost, what it scored."""

    id: int = Field(ge=1)
    parents: list[int] = Field(default_factory=list, description="nodes it starts from "
                               "(none: the task's starting workspace)")
    operator: Operator
    of: int | None = Field(None, description="a debug: the failed node it retries")
    setting: dict[str, Value] = Field(default_factory=dict, description="every knob's value")
    changes: dict[str, list[Value]] = Field(default_factory=dict, description="knob: [value in "
                                            "its first parent (or the start), value here]")
    worker: str = ""
    host: str = ""
    started_at: str = ""
    ended_at: str = ""
    status: Status = "ok"
    reason: str = Field("", description="why it failed (a script's last lines, a sandbox that "
                        "would not open, a scoring failure)")
    search: float | None = Field(None, description="the harness's score on the hidden search split")
    failure: str | None = Field(None, description="the search scoring's failure kind, if any")
    wall_seconds: float = Field(0.0, description="the node's time on its worker, all of it")
    sandbox_seconds: float = Field(0.0, description="the solve scripts' time in the sandbox")
    score_seconds: float = Field(0.0, description="the search scoring's time")
    cpu_seconds: float | None = None
    cpu_source: Literal["rusage", "wall x cpus", ""] = Field("", description="rusage: the "
                                                              "sandbox processes' CPU time; wall x cpus: an estimate")
    gpu_seconds: float | None = None
    cpus: float = 0.0
    # with a model (agent.pool_model): the episode that wrote the node's script
    script: str = Field("", description="the solve script the model wrote (its file name)")
    script_sha: str = Field("", description="sha256 of the model's script: what dedup compares")
    plan: str = Field("", description="the model's plan for the script")
    turns: int = Field(0, description="model turns of the node's episode (a failed run shown "
                       "back and fixed counts one more); 0: no model")
    calls: int = Field(0, description="model calls made for the node (format re-asks included)")
    tokens: int = Field(0, description="tokens in and out of those calls")
    cost: float = 0.0
    tool: str | None = Field(None, description="the method tool run before the script (operator tool)")
    tool_args: dict = Field(default_factory=dict)
    tool_report: str = Field("", description="the tool's JSON report, cut (what the model was shown)")
    error: str = Field("", description="a failed script's last output (what a fix turn shows)")
    output: str = Field("", description="a run's last output (what an improve prompt shows)")

    @property
    def scored(self) -> bool:
        return self.status == "ok" and self.search is not None


def record_of(step: Step) -> NodeRecord | None:
    """The node a ``Record Node`` step holds (None for any other step, or one unreadable)."""
    if step.action != RECORD_NODE or not isinstance(step.data, dict):
        return None
    try:
        return NodeRecord.model_validate(step.data.get("record") or {})
    except ValueError:
        return None


def nodes_of(steps: Sequence[Step]) -> list[tuple[NodeRecord, int]]:
    """Every node the trace records, with its step (the step whose snapshot is the node)."""
    found = []
    for s in steps:
        rec = record_of(s)
        if rec is not None:
            found.append((rec, s.index))
    return found


def has_pool(steps: Sequence[Step]) -> bool:
    return any(s.action == RECORD_NODE for s in steps)


def step_of_node(steps: Sequence[Step], node: int) -> int:
    """The step whose snapshot is pool node ``node`` (``labcoat run --fork RUN --node ID``);
    ``ValueError`` when the run recorded no such node with its workspace."""
    known = []
    for s in steps:
        rec = record_of(s)
        if rec is None:
            continue
        known.append(rec.id)
        if rec.id == node:
            if not (s.data or {}).get("laid", True):
                raise ValueError(f"node {node} was {rec.status}: the run kept no workspace of it")
            return s.index
    raise ValueError(f"the run records no pool node {node}" + (
        f" (its nodes: {min(known)}..{max(known)})" if known else " (it is not a pool run)"))


def selected_of(steps: Sequence[Step]) -> dict[int, float]:
    """Node -> its select score, from the closing Score Candidate steps."""
    out = {}
    for s in steps:
        data = s.data or {}
        if s.action == "Score Candidate" and data.get("split") == "select" and not s.error and \
                isinstance(data.get("node"), int) and data.get("value") is not None:
            out[data["node"]] = float(data["value"])
    return out


def final_node(nodes: Sequence[NodeRecord], selected: dict[int, float],
               higher_is_better: bool) -> NodeRecord | None:
    """The node a pool ends with: the best on select among those scored there (ties: the
    better on search), else the best on search."""
    sign = -1 if higher_is_better else 1
    good = sorted((n for n in nodes if n.scored), key=lambda n: (sign * n.search, n.id))
    picked = [n for n in good if n.id in selected]
    if picked:
        return min(picked, key=lambda n: (sign * selected[n.id], good.index(n)))
    return good[0] if good else None
