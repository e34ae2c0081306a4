"""The solution tree a run's trace records, for views (the TUI's Tree tab), pure.

The trace is the tree: every step of a node carries ``meta["tree"]`` (see
:mod:`agent.tree.agent`). A view needs the nodes with their parents, metrics and statuses, and
each node's script, which is exactly what a resume rebuilds, so it uses the same
:func:`agent.tree.agent.rebuild` (the same ``settle``): what the TUI draws is the tree the
agent searched, never a second reading of the trace.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from agent.pool.records import final_node, has_pool, nodes_of, selected_of
from agent.tree.agent import STARTING, WRITE, TreeAgent, rebuild
from agent.tree.nodes import Journal, Node
from environments.record.runs import RunDir, Step
from environments.task.spec import TaskError, load_task

SCORE_CAP = 1 << 20  # score.json is a few hundred bytes; anything larger is not ours


def has_tree(steps: Sequence[Step]) -> bool:
    """Whether a trace holds a solution tree (any step tagged by the tree agent) or a research
    pool's nodes (``Record Node`` steps), which views draw alike."""
    return _tagged(steps) or has_pool(steps)


def _tagged(steps: Sequence[Step]) -> bool:
    return any(isinstance((s.meta or {}).get("tree"), dict) for s in steps)


def node_of(step: Step | None) -> int | None:
    """The node a step belongs to (its tag), if any; the starting script's 0 is no node."""
    tag = (step.meta or {}).get("tree") if step is not None else None
    node = tag.get("node") if isinstance(tag, dict) else None
    return node if isinstance(node, int) and node > 0 else None


class RunTree(BaseModel):
    """The nodes of a run's tree, the script they are, and the best one."""

    journal: Journal
    script: str  # the solve script every node writes
    best: int | None

    def roots(self) -> list[Node]:
        return [n for n in self.journal.nodes if n.parent is None]

    def children(self, node_id: int) -> list[Node]:
        return self.journal.children(node_id)


def tree_of(steps: Sequence[Step], metric: str, higher_is_better: bool = True) -> RunTree:
    """The tree ``steps`` record; ``metric`` is the task's (a node's printed value is read as
    ``validation <metric>: <number>``, as the agent read it)."""
    if has_pool(steps):
        return pool_tree(steps, higher_is_better)
    journal, _ = rebuild(steps, Journal(higher_is_better=higher_is_better), metric)
    script = next((str(s.args.get("file_name")) for s in steps
                   if s.action == WRITE and node_of(s) and isinstance(s.args, dict)), "")
    best = journal.chosen()
    return RunTree(journal=journal, script=script, best=best.id if best else None)


def result_step(steps: Sequence[Step], metric: str, higher_is_better: bool = True) -> int | None:
    """The step whose workspace is a tree run's result when the run did not end on it, else None.

    A tree search reports its best node, and a run that ends normally (a Final Answer, a
    budget's closing step) has restored that node's run first, so its last step is the result.
    A run cut short otherwise (an ``error``, an interruption) ends on whatever node it was
    growing; its result is then the best node's run (the starting workspace when no node was
    good), the step :meth:`TreeAgent.best_step` names, as the agent itself would have restored.
    """
    if has_pool(steps):
        return pool_result_step(steps, higher_is_better)
    if not _tagged(steps):
        return None
    journal, current = rebuild(steps, Journal(higher_is_better=higher_is_better), metric)
    best = journal.chosen()
    if current == (best.id if best is not None else STARTING):
        return None
    step = TreeAgent.best_step(best)
    return None if step == len(steps) else step


KINDS = {"start": "draft", "draft": "draft", "debug": "debug"}  # crossover, improve: improve


def pool_tree(steps: Sequence[Step], higher_is_better: bool = True) -> RunTree:
    """A pool run's nodes as a tree (first parent as the parent; a crossover's second parent
    is said in its plan line), for the views the tree agent's runs have."""
    selected = selected_of(steps)
    records = nodes_of(steps)
    journal = Journal(higher_is_better=higher_is_better)
    for rec, step in records:
        extra = f" x node {rec.parents[1]}" if len(rec.parents) > 1 else ""
        what = rec.plan.strip() or ", ".join(f"{k}={v!r}" for k, v in rec.setting.items())  # a model's plan
        journal.nodes.append(Node(
            id=rec.id, parent=rec.parents[0] if rec.parents else None,
            kind=KINDS.get(rec.operator, "improve"), code="",
            plan=f"{rec.operator}{extra}: {what} ({rec.worker or 'no worker'})",
            metric=rec.search, metric_source="search" if rec.search is not None else None,
            select=selected.get(rec.id), status="good" if rec.scored else "buggy",
            error=rec.reason or rec.status, seconds=rec.wall_seconds, step=step))
    best = final_node([r for r, _ in records], selected, higher_is_better)
    return RunTree(journal=journal, script="", best=best.id if best else None)


def pool_result_step(steps: Sequence[Step], higher_is_better: bool = True) -> int | None:
    """A pool run cut short is scored on its chosen node's step (None: it ends on it)."""
    records = nodes_of(steps)
    best = final_node([r for r, _ in records], selected_of(steps), higher_is_better)
    if best is None:
        return None
    step = dict((r.id, i) for r, i in records)[best.id]
    current = None
    for s in steps:
        data = s.data or {}
        if s.action == "Record Node" and data.get("laid") and isinstance(data.get("node"), int):
            current = data["node"]
        elif s.action == "Restore Workspace" and not s.error:
            current = ((s.meta or {}).get("pool") or {}).get("node")
        elif s.changed:
            current = None
    return None if current == best.id else step


def regular_file(path: Path) -> bool:
    """A plain file, not a link, FIFO or device: reading one of those could hang or leave the run."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def run_metric(run: RunDir) -> tuple[str, bool]:
    """The run's task metric and direction (how a node's printed value is read): from the
    prepared task, else from ``score.json``, else unnamed and higher-is-better. One reading for
    every view (the TUI's Tree tab, ``labcoat report tree``)."""
    try:
        task = load_task(run.meta.task_root, run.meta.task)
        return task.metric, task.higher_is_better
    except (TaskError, OSError, ValueError):
        pass
    score = run.path / "score.json"
    if not regular_file(score) or score.stat().st_size > SCORE_CAP:
        return "", True
    try:
        data = json.loads(score.read_text())
        return str(data.get("metric") or ""), data.get("direction", "higher") != "lower"
    except (OSError, ValueError, AttributeError):
        return "", True
