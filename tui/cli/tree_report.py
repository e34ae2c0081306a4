"""``labcoat report tree RUN_DIR``: a tree run's nodes on the command line.

The batch report shows a tree run as one row (``tree: MODEL``); this view lists the nodes the
search made: parent, operator, status, validation metric, time, plan, and which one is best.
The tree is :func:`agent.tree.view.tree_of` of the trace, the same rebuild the agent resumes
from and the TUI's Tree tab draws, so the three never disagree. Plans are the model's words:
they are cut to one printable line and reach rich as plain text (never markup, never a
terminal control sequence: ``tui.cli.common.print_table``); ``--json`` keeps them whole.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

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
    op: NodeKind
    status: Literal["ok", "buggy", "not run"]
    metric: float | None = Field(description="the node's metric; None for a buggy or unrun node")
    metric_source: Literal["validation", "output"] | None = Field(
        description="validation: the task's validation split scored it; output: the script printed it")
    seconds: float
    best: bool
    plan: str = Field(description="the model's plan for the node, whole")
    error: str = Field("", description="a buggy node's last output line (usually the exception)")


class TreeReport(BaseModel):
    """A tree run's nodes, its task's metric and direction, and the best node."""

    run: str
    path: str
    task: str
    metric: str
    direction: Literal["higher", "lower"]
    script: str = Field(description="the solve script every node writes")
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
    if row.status == "buggy":
        return "failed"
    if row.metric is None:
        return "n/a"
    return num(row.metric) + (" (printed)" if row.metric_source == "output" else "")


def tree_columns(report: TreeReport) -> list[Col]:
    metric = one_line(report.metric, 30) or "metric"
    return [Col("node", key=True, justify="right"), Col("parent", justify="right"), Col("op"),
            Col("status"), Col(metric, justify="right"), Col("seconds", extra=True, justify="right"),
            Col("best"), Col("plan")]


def tree_cells(row: TreeNodeRow, plan_width: int = PLAN_WIDTH) -> list[str]:
    """A node's cells, plain text (never markup for rich: the plan is the model's)."""
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
    return (f"tree of {one_line(report.task, 60)}: {plural(len(report.nodes), 'node')} · "
            f"{metric}, {report.direction} is better")


def footer(report: TreeReport) -> str:
    script = one_line(report.script, 100) or "(no script written)"
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
