"""``labcoat report tree RUN_DIR``: a tree run's nodes (or a research pool's) on the command line.

The batch report shows a tree run as one row (``tree: MODEL``); this view lists the nodes the
search made: parent, operator, status, validation metric, time, plan, and which one is best.
The tree is :func:`agent.tree.view.tree_of` of the trace, the same rebuild the agent resumes
from and the TUI's Tree tab draws, so the three never disagree. Plans are the model's words:
they are cut to one printable line and reach rich as plain text (never markup, never a
terminal control sequence: ``tui.cli.common.print_table``); ``--json`` keeps them whole.
A research pool's run (``--agent pool``) lists its ``Record Node`` steps' records instead: parents,
operator, status (ok, buggy, lost), search and select scores, worker, times, CPU seconds, setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from agent.pool.records import NodeRecord, Operator, has_pool, nodes_of
from agent.tree.nodes import Node, NodeKind
from agent.tree.prompts import last_line
from agent.tree.view import has_tree, regular_file, run_metric, tree_of
from environments.record.runs import RunDir
from environments.reports import md_table
from environments.untrusted.words import plural
from tui.cli.common import Col, num

PLAN_WIDTH = 80  # the table's plan column: one line, cut here (--json keeps the whole plan)


class TreeReportError(ValueError):
    """The folder is not a readable run, or the run recorded no tree: one line for the user."""


class TreeNodeRow(BaseModel):
    """One node as the report shows it (``--json`` dumps these whole)."""

    node: int
    parent: int | None
    op: NodeKind | Operator
    status: Literal["ok", "buggy", "not run", "lost"]
    metric: float | None = Field(description="the node's metric; None for a buggy or unrun node")
    metric_source: Literal["search", "validation", "output"] | None = Field(
        description="search: the harness scored it on the task's hidden search split; validation: "
        "Validate Submission scored it; output: the script printed it")
    seconds: float
    best: bool
    plan: str = Field(description="the model's plan for the node, whole")
    error: str = Field("", description="a buggy node's last output line (usually the exception)")
    # a research pool's node (--agent pool) carries its record too
    parents: list[int] = Field(default_factory=list, description="pool: every parent (a crossover has two)")
    step: int | None = Field(None, description="the step whose snapshot is the node (--fork RUN --node ID)")
    worker: str = ""
    started_at: str = ""
    ended_at: str = ""
    select: float | None = Field(None, description="its hidden select score, when it was among the best on search")
    cpu_seconds: float | None = None
    cpu_source: str = ""
    gpu_seconds: float | None = None
    setting: dict[str, int | float | str] = Field(default_factory=dict)
    changes: dict[str, list[int | float | str | None]] = Field(default_factory=dict)


class CurvePoint(BaseModel):
    """A pool's search as it went: after each node ended, the best search score so far."""

    node: int
    wall_seconds: float = Field(description="since the first node started")
    cpu_seconds: float = Field(description="all nodes' CPU seconds so far")
    best_search: float | None


def pool_curve(recs: list[NodeRecord], higher: bool) -> list[CurvePoint]:
    """Score against wall clock and against compute, so runs on 2 and on 8 workers compare."""
    from datetime import datetime

    timed = [r for r in recs if r.started_at and r.ended_at]
    if not timed:
        return []
    t0 = min(datetime.fromisoformat(r.started_at) for r in timed)
    best, cpu, out = None, 0.0, []
    for r in sorted(timed, key=lambda r: r.ended_at):
        cpu += r.cpu_seconds or 0.0
        if r.scored and (best is None or (r.search > best if higher else r.search < best)):
            best = r.search
        out.append(CurvePoint(node=r.id, wall_seconds=round((datetime.fromisoformat(r.ended_at) - t0)
                                                            .total_seconds(), 3),
                              cpu_seconds=round(cpu, 3), best_search=best))
    return out


class TreeReport(BaseModel):
    """A tree run's nodes, its task's metric and direction, and the best node."""

    run: str
    path: str
    task: str
    metric: str
    direction: Literal["higher", "lower"]
    script: str = Field(description="the solve script every node writes")
    kind: Literal["tree", "pool"] = "tree"
    curve: list[CurvePoint] = Field(default_factory=list, description="pool: the best search score "
                                    "so far as nodes ended, against wall clock and CPU seconds")
    best: int | None
    nodes: list[TreeNodeRow]


STATUS = {"good": "ok", "buggy": "buggy", "pending": "not run"}


def open_run(run_dir: Path) -> RunDir:
    """The run at ``run_dir``, or a :class:`TreeReportError` saying why it cannot be read."""
    if not run_dir.is_dir():
        raise TreeReportError(f"{run_dir}: no such run directory")
    meta = run_dir / "run.json"
    if not regular_file(meta):
        raise TreeReportError(f"{run_dir}: " + ("run.json is not a regular file" if os.path.lexists(meta)
                                                else "not a run directory (no run.json)"))
    try:
        run = RunDir.open(run_dir, newer_ok=True)
    except (OSError, ValueError) as err:  # pydantic's ValidationError is a ValueError
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise TreeReportError(f"{run_dir}: unreadable run.json ({first})") from err
    if run.trace_path.exists() and not regular_file(run.trace_path):
        raise TreeReportError(f"{run_dir}: trace.jsonl is not a regular file")
    return run


def node_row(node: Node, best: int | None) -> TreeNodeRow:
    return TreeNodeRow(
        node=node.id, parent=node.parent, op=node.kind, status=STATUS[node.status],
        metric=node.metric if node.status == "good" else None,
        metric_source=node.metric_source if node.status == "good" else None,
        seconds=node.seconds, best=node.id == best, plan=node.plan,
        error=last_line(node.error) if node.status == "buggy" else "")


POOL_STATUS = {"ok": "ok", "failed": "buggy", "lost": "lost"}


def pool_row(rec: NodeRecord, step: int, node: Node, best: int | None) -> TreeNodeRow:
    return TreeNodeRow(
        node=rec.id, parent=rec.parents[0] if rec.parents else None, op=rec.operator,
        status=POOL_STATUS[rec.status], metric=rec.search if rec.scored else None,
        metric_source="search" if rec.scored else None, seconds=rec.wall_seconds,
        best=rec.id == best, plan=node.plan, error=last_line(rec.reason) if not rec.scored else "",
        parents=rec.parents, step=step, worker=rec.worker, started_at=rec.started_at,
        ended_at=rec.ended_at, select=node.select, cpu_seconds=rec.cpu_seconds,
        cpu_source=rec.cpu_source, gpu_seconds=rec.gpu_seconds, setting=rec.setting,
        changes=rec.changes)


def load_tree_report(run_dir: Path) -> TreeReport:
    """The tree ``run_dir``'s trace records; :class:`TreeReportError` when there is none."""
    run = open_run(run_dir)
    steps = run.steps(trim=False)  # only reading: a live run's last line may be mid-write
    if not has_tree(steps):
        raise TreeReportError(
            f"{run_dir}: not a tree run (agent {run.meta.agent!r}, {plural(len(steps), 'step')}, none tagged "
            "by the tree agent); labcoat report runs RUNS_DIR shows other runs")
    metric, higher = run_metric(run)
    tree = tree_of(steps, metric, higher)
    if has_pool(steps):
        by_id = {n.id: n for n in tree.journal.nodes}
        return TreeReport(
            run=run.meta.run_id, path=str(run.path), task=run.meta.task, metric=metric,
            direction="higher" if higher else "lower", script="", best=tree.best, kind="pool",
            curve=pool_curve([r for r, _ in nodes_of(steps)], higher),
            nodes=[pool_row(rec, step, by_id[rec.id], tree.best) for rec, step in nodes_of(steps)])
    return TreeReport(
        run=run.meta.run_id, path=str(run.path), task=run.meta.task, metric=metric,
        direction="higher" if higher else "lower", script=tree.script, best=tree.best,
        nodes=[node_row(n, tree.best) for n in tree.journal.nodes])


# ---- presentation ---------------------------------------------------------------------------

def one_line(text: str, width: int = PLAN_WIDTH) -> str:
    """``text`` as one printable line of at most ``width`` characters (an ellipsis if cut)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def metric_text(row: TreeNodeRow) -> str:
    if row.status in ("buggy", "lost") and row.metric is None:
        return "failed" if row.status == "buggy" else "lost"
    if row.metric is None:
        return "n/a"
    return num(row.metric) + (" (printed)" if row.metric_source == "output" else "")


def tree_columns(report: TreeReport) -> list[Col]:
    metric = one_line(report.metric, 30) or "metric"
    if report.kind == "pool":
        return [Col("node", key=True, justify="right"), Col("parents", justify="right"), Col("op"),
                Col("status"), Col(metric, justify="right"), Col("select", justify="right"),
                Col("worker", extra=True), Col("seconds", extra=True, justify="right"),
                Col("cpu s", extra=True, justify="right"), Col("best"), Col("setting")]
    return [Col("node", key=True, justify="right"), Col("parent", justify="right"), Col("op"),
            Col("status"), Col(metric, justify="right"), Col("seconds", extra=True, justify="right"),
            Col("best"), Col("plan")]


def tree_cells(row: TreeNodeRow, plan_width: int = PLAN_WIDTH) -> list[str]:
    """A node's cells, plain text (never markup for rich: the plan is the model's)."""
    if row.parents or row.worker or row.step is not None:  # a pool's node
        setting = ", ".join(f"{k}={v!r}" for k, v in row.setting.items())
        return [str(row.node), ",".join(map(str, row.parents)), row.op, row.status, metric_text(row),
                "" if row.select is None else num(row.select), one_line(row.worker, 24),
                f"{row.seconds:.1f}", "" if row.cpu_seconds is None else f"{row.cpu_seconds:.1f}",
                "★" if row.best else "", one_line(setting or row.error, plan_width)]
    return [str(row.node), "" if row.parent is None else str(row.parent), row.op, row.status,
            metric_text(row), f"{row.seconds:.1f}", "★" if row.best else "",
            one_line(row.plan or row.error, plan_width)]


def plan_width(report: TreeReport, width: int) -> int:
    """How long a plan may be for each row to stay one line ``width`` columns wide: what the
    other columns leave (``seconds`` gives way first, as an extra column), at least 16."""
    cols = tree_columns(report)
    rows = [tree_cells(r) for r in report.nodes]
    kept = [i for i, c in enumerate(cols[:-1]) if not c.extra]
    used = sum(max([len(cols[i].name), *(len(r[i]) for r in rows)]) for i in kept)
    return max(16, width - used - 3 * (len(kept) + 1) - 1)


def header(report: TreeReport) -> str:
    metric = one_line(report.metric, 60) or "an unnamed metric"
    if report.kind == "pool":
        workers = len({r.worker for r in report.nodes if r.worker})
        return (f"research pool on {one_line(report.task, 60)}: {plural(len(report.nodes), 'node')} "
                f"by {plural(workers, 'worker')} · search {metric}, {report.direction} is better")
    return (f"tree of {one_line(report.task, 60)}: {plural(len(report.nodes), 'node')} · "
            f"{metric}, {report.direction} is better")


def footer(report: TreeReport) -> str:
    script = one_line(report.script, 100) or "(no script written)"
    if report.kind == "pool":
        if report.best is None:
            return "no node scored on search, so no node was chosen"
        best = next(r for r in report.nodes if r.node == report.best)
        spent = (f" · best search {num(report.curve[-1].best_search)} after "
                 f"{report.curve[-1].wall_seconds:.0f} s, {report.curve[-1].cpu_seconds:.0f} CPU s "
                 "(--json: the curve)") if report.curve and report.curve[-1].best_search is not None else ""
        return (f"chosen: node {best.node} ({best.op}, search {metric_text(best)}"
                + (f", select {num(best.select)}" if best.select is not None else "")
                + f") · step {best.step}: labcoat run --fork RUN --node {best.node}{spent}")
    if report.best is None:
        return f"no node ran successfully, so no best node; every node writes {script}"
    best = next(r for r in report.nodes if r.node == report.best)
    return (f"best: node {best.node} ({best.op}, {one_line(report.metric, 30) or 'metric'} "
            f"{metric_text(best)}) · script {script}")


def tree_markdown(report: TreeReport) -> str:
    """The table as Markdown: a header line, the nodes, the footer."""
    table = md_table([c.name for c in tree_columns(report)], [tree_cells(r) for r in report.nodes])
    return f"{header(report)}\n\n{table}\n\n{footer(report)}\n"


def rich_cells(report: TreeReport, width: int | None) -> list[list[str]]:
    """The rows for the terminal's table (plain text: ``print_table`` never reads markup);
    ``width``: the terminal's, to keep each plan on one line (None: ``--wide``, plans at
    :data:`PLAN_WIDTH`)."""
    cut = PLAN_WIDTH if width is None else min(PLAN_WIDTH, plan_width(report, width))
    return [tree_cells(r, cut) for r in report.nodes]
