"""The report's table: rows aggregated from run records, and the text, Markdown and JSON they
are shown as (the CLI prints it; nothing here reads a file or a terminal)."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

from pydantic import BaseModel, Field

from environments.reports.curves import anytime_json, stderr
from environments.reports.records import RowKey, RunRecord
from environments.scoring.score import FailureReason
from environments.untrusted.words import gain, metric, plural

FAILURE_REASONS: tuple[FailureReason, ...] = ("no_submission", "eval_error", "timeout", "infrastructure",
                                              "not_scored")


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


class Row(BaseModel):
    """One row of the report: the runs of one :class:`RowKey` (by default its independent
    attempts; forks, interrupted, resumed and repeated runs each in a row of their own)."""

    key: RowKey
    task: str
    model: str = Field(description="the row's label (RowKey.label)")
    runs: int
    successes: int
    success_rate: float
    success_rate_stderr: float | None
    scored: int = Field(description="runs with a value (the improvement's n)")
    mean_improvement: float | None
    improvement_stderr: float | None
    best_step_improvement: float | None
    best_step_improvement_stderr: float | None
    mean_value: float | None = Field(None, description="the raw metric, mean over scored runs")
    mean_normalized: float | None = Field(
        None, description="normalized score (0 = baseline, 1 = reference; the task's anchors)")
    normalized_stderr: float | None = None
    mean_steps: float
    mean_tokens: float
    total_tokens: int
    mean_cost: float
    total_cost: float
    mean_seconds: float
    failures: dict[str, int] = Field(
        description="failure reason, or unscored / not_run / no_baseline -> runs without success")
    infrastructure_failures: int
    run_errors: int = Field(description="runs whose episode ended with status error (or never ran)")
    seeds: int = Field(0, description="distinct seeds among the runs")
    same_every_seed: bool = Field(
        False, description="two or more seeds, all scoring the same value: the seed changed nothing "
        "here, so the spread is no measure of the actor's variance")


def summarise_runs(key: RowKey, runs: list[RunRecord]) -> Row:
    n = len(runs)
    successes = sum(r.outcome == "success" for r in runs)
    rate = successes / n if n else 0.0
    imps = [r.improvement for r in runs if r.improvement is not None]
    best = [r.best_improvement for r in runs if r.best_improvement is not None]
    norm = [r.normalized for r in runs if r.normalized is not None]
    failures = {k: sum(r.outcome == k for r in runs) for k in (*FAILURE_REASONS, "unscored", "not_run", "no_baseline")}
    return Row(
        key=key, task=key.task, model=key.label, runs=n, successes=successes, success_rate=rate,
        success_rate_stderr=math.sqrt(rate * (1 - rate) / n) if n > 1 else None,
        scored=len(imps), mean_improvement=_mean(imps), improvement_stderr=stderr(imps),
        best_step_improvement=_mean(best), best_step_improvement_stderr=stderr(best),
        mean_value=_mean([r.value for r in runs if r.value is not None]),
        mean_normalized=_mean(norm), normalized_stderr=stderr(norm),
        mean_steps=_mean([r.steps for r in runs]) or 0.0,
        mean_tokens=_mean([r.tokens for r in runs]) or 0.0, total_tokens=sum(r.tokens for r in runs),
        mean_cost=_mean([r.cost for r in runs]) or 0.0, total_cost=sum(r.cost for r in runs),
        mean_seconds=_mean([r.seconds for r in runs]) or 0.0,
        failures={k: v for k, v in failures.items() if v},
        infrastructure_failures=failures["infrastructure"],
        seeds=len({r.seed for r in runs}),
        same_every_seed=len({r.seed for r in runs if r.value is not None}) > 1
        and len({r.value for r in runs if r.value is not None}) == 1
        and len(imps) == n,
        run_errors=sum(r.status == "error" for r in runs),
    )


def build_report(runs: list[RunRecord]) -> list[Row]:
    """One row per key, independent attempts first within a task."""
    groups: dict[RowKey, list[RunRecord]] = {}
    for r in runs:
        groups.setdefault(r.key, []).append(r)
    order = sorted(groups, key=lambda k: (k.task, k.attempt != "independent", k.label))
    return [summarise_runs(key, groups[key]) for key in order]


class Comparison(BaseModel):
    task: str
    a: Row
    b: Row
    success_rate_delta: float
    mean_improvement_delta: float | None


def compare(rows: list[Row], a: str, b: str) -> list[Comparison]:
    """Models ``a`` and ``b`` side by side on the tasks both ran."""
    by = {(r.task, r.model): r for r in rows}
    tasks = sorted({r.task for r in rows if (r.task, a) in by and (r.task, b) in by})
    out = []
    for t in tasks:
        ra, rb = by[(t, a)], by[(t, b)]
        delta = (None if ra.mean_improvement is None or rb.mean_improvement is None
                 else rb.mean_improvement - ra.mean_improvement)
        out.append(Comparison(task=t, a=ra, b=rb, success_rate_delta=rb.success_rate - ra.success_rate,
                              mean_improvement_delta=delta))
    return out


# ---- rendering (text only; the CLI prints it) -------------------------------------------------

def pct(value: float | None, err: float | None = None) -> str:
    if value is None:
        return "–"
    return gain(value) + (f" ± {err:.1%}" if err is not None else "")


def rate(row: Row) -> str:
    err = f" ± {row.success_rate_stderr:.0%}" if row.success_rate_stderr is not None else ""
    return f"{row.success_rate:.0%}{err} ({row.successes}/{row.runs})"


def failures_text(row: Row) -> str:
    return ", ".join(f"{k} {v}" for k, v in row.failures.items() if k != "infrastructure") or "0"


COLUMNS = ["task", "model", "runs", "success", "metric", "normalized", "mean improvement",
           "best-step improvement",
           "steps", "tokens", "cost $", "wall s", "failures", "infra failures"]


def row_cells(row: Row) -> list[str]:
    norm = "n/a" if row.mean_normalized is None else f"{row.mean_normalized:.2f}" + (
        f" ± {row.normalized_stderr:.2f}" if row.normalized_stderr is not None else "")
    raw = metric(row.mean_value)
    improvement = pct(row.mean_improvement, row.improvement_stderr)
    if row.same_every_seed:
        improvement = f"{pct(row.mean_improvement)} (same for all {plural(row.seeds, 'seed')})"
    return [row.task, row.model, str(row.runs), rate(row), raw, norm, improvement,
            pct(row.best_step_improvement, row.best_step_improvement_stderr),
            f"{row.mean_steps:.1f}", f"{row.mean_tokens:,.0f}", f"{row.total_cost:.4f}",
            f"{row.mean_seconds:.1f}", failures_text(row), str(row.infrastructure_failures)]


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; a ``|`` inside a cell is escaped (cells may quote model strings)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def to_markdown(rows: list[Row]) -> str:
    note = ("Success: improvement ≥ the task's threshold. Improvement: mean ± stderr over scored "
            "runs (\"same for all N seeds\": every seed scored the same value, so the seed changed "
            "nothing and no spread was measured); steps and tokens are means per run; cost is the "
            "total. Failures count as runs without success; infrastructure failures are listed "
            "separately. A row counts independent attempts, one per task × actor × seed; forks "
            "(their own steps and tokens only), interrupted, resumed and repeated runs have rows "
            "of their own (--pool-all pools them).")
    return md_table(COLUMNS, [row_cells(r) for r in rows]) + "\n\n" + note + "\n"


def comparison_markdown(comparisons: list[Comparison], a: str, b: str) -> str:
    header = ["task", f"{a} success", f"{b} success", "Δ success", f"{a} improvement",
              f"{b} improvement", "Δ improvement", f"{a} cost $", f"{b} cost $"]
    body = [[c.task, rate(c.a), rate(c.b), f"{c.success_rate_delta:+.0%}",
             pct(c.a.mean_improvement, c.a.improvement_stderr),
             pct(c.b.mean_improvement, c.b.improvement_stderr), pct(c.mean_improvement_delta),
             f"{c.a.total_cost:.4f}", f"{c.b.total_cost:.4f}"] for c in comparisons]
    return md_table(header, body) + "\n"


def report_json(rows: list[Row], runs: list[RunRecord]) -> dict[str, Any]:
    per_step = {"score", "curve", "normalized_curve", "step_seconds", "step_tokens"}
    return {"rows": [r.model_dump() for r in rows],
            "runs": [{**r.model_dump(exclude=per_step), "outcome": r.outcome,
                      "improvement": r.improvement, "best_improvement": r.best_improvement}
                     for r in runs],
            "anytime": anytime_json(runs)}


def dump(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)
