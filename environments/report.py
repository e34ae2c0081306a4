"""Reports over many runs: pure aggregation of run directories (reading them is all it does).

One row per task × model: runs, success rate, mean improvement ± stderr, best-step improvement,
mean steps, tokens, cost, wall time, and failures by reason — the measures MLAgentBench reports,
plus error bars. Every run found counts: a run never scored, a run whose evaluation failed and a
run lost to an infrastructure failure are all runs without success; infrastructure failures are
also shown in their own column, never silently dropped.

Improvement is the scored value's relative gain over the baseline (``score.json``). The
best-step improvement is, per run, the best improvement among its scored steps
(``scores.json``, from ``labcoat score --all-steps``; the final score alone when there is no
curve), averaged over runs. Plots (matplotlib, imported only when plotting) are drawn from the
same numbers.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from environments.anchors import load_anchors
from environments.manifest import lookup
from environments.runs import BatchRecords, RunMeta
from environments.scoring import FailureReason, Score, load_scores

FAILURE_REASONS: tuple[FailureReason, ...] = ("no_submission", "eval_error", "timeout", "infrastructure")
_SKIP_DIRS = {"workspace", "snapshots", "backups"}


class RunRecord(BaseModel):
    """One run as a report sees it."""

    path: str
    run_id: str
    task: str
    model: str = Field(description="the model string, else the agent/actor name")
    seed: int = 0
    status: str
    steps: int = 0
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    score: Score | None = None
    curve: dict[int, float | None] = Field(default_factory=dict, description="step -> improvement")
    error: str | None = Field(None, description="why a batch combination never made a run")
    anchored: bool = Field(False, description="the task has anchors, so normalized scores exist")
    normalized_curve: dict[int, float] = Field(
        default_factory=dict, description="step -> normalized score (failures as 0: see step_value)")
    step_seconds: dict[int, float] = Field(
        default_factory=dict, description="step -> wall-clock seconds since the run started")
    step_tokens: dict[int, int] = Field(
        default_factory=dict, description="step -> tokens spent up to and including the step")

    @property
    def outcome(self) -> str:
        """``success``, ``below_threshold``, a failure reason, or ``unscored``."""
        if self.error is not None:
            return "not_run"
        if self.score is None:
            return "unscored"
        if self.score.failure is not None:
            return self.score.failure
        if self.score.improvement is None:
            return "no_baseline"
        return "success" if self.score.success else "below_threshold"

    @property
    def improvement(self) -> float | None:
        return self.score.improvement if self.score is not None else None

    @property
    def value(self) -> float | None:
        return self.score.value if self.score is not None else None

    @property
    def normalized(self) -> float | None:
        return self.score.normalized if self.score is not None else None

    @property
    def best_improvement(self) -> float | None:
        values = [v for v in self.curve.values() if v is not None]
        if self.improvement is not None:
            values.append(self.improvement)
        return max(values) if values else None


UNISOLATED = " (UNISOLATED: --sandbox none)"
NO_TOOLS = " (no method tools)"


#: agents that take the research agent's model strings, so a row must name them
SHARES_MODELS = ("tree",)


def model_label(meta: RunMeta, method_tools: bool = True) -> str:
    """The row a run belongs to: its model (else agent, else actor), prefixed with the agent
    where the model string does not name it (``tree: M`` beside the research agent's ``M``). A
    run whose code ran with no isolation gets a row of its own that says so, never mixed into
    an isolated one, and so does a run whose task's method tools were withheld (the control
    arm of an uplift)."""
    label = meta.model or meta.agent or meta.actor
    if meta.model and meta.agent in SHARES_MODELS:
        label = f"{meta.agent}: {meta.model}"
    if not method_tools:
        label += NO_TOOLS
    return label + UNISOLATED if meta.sandbox == "none" else label


def offered_method_tools(path: Path, meta: RunMeta) -> bool:
    """Whether the run's actor was offered the task's method tools.

    A batch records that in its spec (``method_tools``, ``agent/batch.py``), and a batch's runs
    lie at ``BATCH/runs/<key>/<run_id>/``; read from there (not ``meta.batch``, which a moved
    folder leaves stale). A run's own config saying so (``config.method_tools``) wins.
    """
    own = getattr(meta.config, "method_tools", None)
    if isinstance(own, bool):
        return own
    if meta.batch is None or len(path.parents) < 3:
        return True
    spec = _batch_spec(path.parents[2] / "batch.json")
    return spec.get("method_tools", True) is not False


def _batch_spec(path: Path) -> dict[str, Any]:
    try:
        spec = json.loads(path.read_text()).get("spec")
    except (OSError, ValueError, AttributeError):
        return {}
    return spec if isinstance(spec, dict) else {}


def find_run_dirs(root: str | Path) -> list[Path]:
    """Every folder under ``root`` (or ``root`` itself) holding a ``run.json``.

    Hidden folders (a batch's ``.retired/`` attempts) and a run's own inner folders are skipped.
    """
    root = Path(root)
    if (root / "run.json").is_file():
        return [root]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if "run.json" in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
    return sorted(found)


def parse_where(clauses: Iterable[str]) -> dict[str, str]:
    """``["backend=docker", "config.mode=tools"]`` -> a filter; a clause without ``=`` is an error."""
    out = {}
    for clause in clauses:
        key, sep, value = clause.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--where {clause!r}: write KEY=VALUE (e.g. backend=docker, "
                             "config.mode=tools, manifest.machine.cores=16)")
        out[key.strip()] = value.strip()
    return out


def _text(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return str(value).lower()
    return str(value)


def matches(meta: RunMeta, where: Mapping[str, str]) -> bool:
    """Whether a run's ``run.json`` has every ``key=value`` of ``where`` (keys as
    :func:`environments.manifest.lookup` reads them; values compared as text)."""
    if not where:
        return True
    data = meta.model_dump(mode="json")
    return all(_text(lookup(data, k)) == v for k, v in where.items())


def step_value(score: Score | None, anchored: bool) -> float | None:
    """A scored snapshot's normalized score as curves and uplift count it.

    An evaluation the submission failed (no submission, eval error, timeout) earned nothing
    over the baseline, so it counts as the baseline anchor's 0 rather than vanishing (which
    would leave only the lucky runs in a mean). An infrastructure failure says nothing about
    the actor and a task without anchors has no scale: both are ``None`` (no value).
    """
    if score is None or not anchored or score.failure == "infrastructure":
        return None
    if score.failure is not None:
        return 0.0
    return score.normalized


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


def load_run(path: str | Path, meta: RunMeta | None = None) -> RunRecord:
    path = Path(path)
    meta = meta or RunMeta.model_validate_json((path / "run.json").read_text())
    score = None
    if (path / "score.json").is_file():
        score = Score.model_validate_json((path / "score.json").read_text())
    scores = load_scores(path)
    curve = {step: s.improvement for step, s in scores.items()}
    try:
        anchored = load_anchors(Path(meta.task_root)) is not None
    except (OSError, ValueError):
        anchored = False
    # the prepared copy may be gone (cache cleared): a normalized value shows the anchors existed
    anchored = anchored or any(s.normalized is not None for s in scores.values())
    normalized = {step: v for step, s in scores.items() if (v := step_value(s, anchored)) is not None}
    seconds: dict[int, float] = {}
    tokens: dict[int, int] = {}
    if normalized:  # only a run on a curve pays for reading its trace and call log
        start = meta.manifest.started_at if meta.manifest and meta.manifest.started_at else meta.created_at
        seconds, tokens = read_step_times(path, start), read_step_tokens(path)
    t = meta.totals
    return RunRecord(
        path=str(path), run_id=meta.run_id, task=meta.task, model=model_label(meta, offered_method_tools(path, meta)),
        seed=meta.seed,
        status=meta.status, steps=t.steps, tokens=t.tokens_in + t.tokens_out, cost=t.cost,
        seconds=t.seconds, score=score, curve=curve, anchored=anchored,
        normalized_curve=normalized, step_seconds=seconds, step_tokens=tokens,
    )


def lost_combinations(root: str | Path) -> list[RunRecord]:
    """Batch combinations (``batch.json`` under ``root``) that failed before making a run dir.

    They count as runs that failed (outcome ``not_run``) so a crash is never dropped silently.
    """
    records = []
    for manifest in sorted(Path(root).rglob("batch.json")):
        if any(part.startswith(".") for part in manifest.relative_to(root).parts):
            continue
        try:
            combos = BatchRecords.model_validate_json(manifest.read_text()).combos
        except (OSError, ValueError):
            continue
        for key, c in combos.items():
            if c.state == "failed" and not c.run_dir:
                records.append(RunRecord(
                    path=str(manifest.parent / "runs" / key), run_id=f"{key} (no run)",
                    task=Path(c.task).name, model=c.model, seed=c.seed,
                    status="error", error=(c.error or "").strip()[:500]))
    return records


def load_runs(*roots: str | Path, label: str | None = None,
              where: Mapping[str, str] | None = None) -> list[RunRecord]:
    """All runs under ``roots`` (and batch combinations lost before their run started);
    ``label`` replaces each run's model label (for comparisons). ``where`` keeps only runs
    whose ``run.json`` matches (:func:`matches`); lost combinations have no run.json to match,
    so a filtered report leaves them out."""
    metas = [(p, RunMeta.model_validate_json((p / "run.json").read_text()))
             for root in roots for p in find_run_dirs(root)]
    records = [load_run(p, meta) for p, meta in metas if matches(meta, where or {})]
    if not where:
        records += [r for root in roots for r in lost_combinations(root)]
    if label is not None:
        for r in records:
            r.model = label
    return records


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _stderr(values: list[float]) -> float | None:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None


class Row(BaseModel):
    """One task × model cell of the report."""

    task: str
    model: str
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


def summarise_runs(task: str, model: str, runs: list[RunRecord]) -> Row:
    n = len(runs)
    successes = sum(r.outcome == "success" for r in runs)
    rate = successes / n if n else 0.0
    imps = [r.improvement for r in runs if r.improvement is not None]
    best = [r.best_improvement for r in runs if r.best_improvement is not None]
    norm = [r.normalized for r in runs if r.normalized is not None]
    failures = {k: sum(r.outcome == k for r in runs) for k in (*FAILURE_REASONS, "unscored", "not_run", "no_baseline")}
    return Row(
        task=task, model=model, runs=n, successes=successes, success_rate=rate,
        success_rate_stderr=math.sqrt(rate * (1 - rate) / n) if n > 1 else None,
        scored=len(imps), mean_improvement=_mean(imps), improvement_stderr=_stderr(imps),
        best_step_improvement=_mean(best), best_step_improvement_stderr=_stderr(best),
        mean_value=_mean([r.value for r in runs if r.value is not None]),
        mean_normalized=_mean(norm), normalized_stderr=_stderr(norm),
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
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for r in runs:
        groups.setdefault((r.task, r.model), []).append(r)
    return [summarise_runs(task, model, rs) for (task, model), rs in sorted(groups.items())]


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
    return f"{value:+.1%}" + (f" ± {err:.1%}" if err is not None else "")


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
    raw = "n/a" if row.mean_value is None else f"{row.mean_value:.4g}"
    improvement = pct(row.mean_improvement, row.improvement_stderr)
    if row.same_every_seed:
        improvement = f"{pct(row.mean_improvement)} (same for all {row.seeds} seeds)"
    return [row.task, row.model, str(row.runs), rate(row), raw, norm, improvement,
            pct(row.best_step_improvement, row.best_step_improvement_stderr),
            f"{row.mean_steps:.1f}", f"{row.mean_tokens:,.0f}", f"{row.total_cost:.4f}",
            f"{row.mean_seconds:.1f}", failures_text(row), str(row.infrastructure_failures)]


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def to_markdown(rows: list[Row]) -> str:
    note = ("Success: improvement ≥ the task's threshold. Improvement: mean ± stderr over scored "
            "runs (\"same for all N seeds\": every seed scored the same value, so the seed changed "
            "nothing and no spread was measured); steps and tokens are means per run; cost is the "
            "total. Failures count as runs without success; infrastructure failures are listed "
            "separately.")
    return _md_table(COLUMNS, [row_cells(r) for r in rows]) + "\n\n" + note + "\n"


def comparison_markdown(comparisons: list[Comparison], a: str, b: str) -> str:
    header = ["task", f"{a} success", f"{b} success", "Δ success", f"{a} improvement",
              f"{b} improvement", "Δ improvement", f"{a} cost $", f"{b} cost $"]
    body = [[c.task, rate(c.a), rate(c.b), f"{c.success_rate_delta:+.0%}",
             pct(c.a.mean_improvement, c.a.improvement_stderr),
             pct(c.b.mean_improvement, c.b.improvement_stderr), pct(c.mean_improvement_delta),
             f"{c.a.total_cost:.4f}", f"{c.b.total_cost:.4f}"] for c in comparisons]
    return _md_table(header, body) + "\n"


def report_json(rows: list[Row], runs: list[RunRecord]) -> dict[str, Any]:
    per_step = {"score", "curve", "normalized_curve", "step_seconds", "step_tokens"}
    return {"rows": [r.model_dump() for r in rows],
            "runs": [{**r.model_dump(exclude=per_step), "outcome": r.outcome,
                      "improvement": r.improvement, "best_improvement": r.best_improvement}
                     for r in runs],
            "anytime": anytime_json(runs)}


# ---- plots ----------------------------------------------------------------------------------

def improvement_curves(runs: list[RunRecord]) -> dict[str, dict[str, list[tuple[int, float, float]]]]:
    """task -> model -> [(step, mean improvement, stderr)] over that model's runs.

    A run's improvement at a step is its latest scored improvement at or before the step (a run
    that ended keeps its final value); steps are the union of scored steps.
    """
    out: dict[str, dict[str, list[tuple[int, float, float]]]] = {}
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for r in runs:
        curve = dict(r.curve)
        if not curve and r.score is not None and r.score.step is not None:
            curve = {r.score.step: r.improvement}
        if any(v is not None for v in curve.values()):
            groups.setdefault((r.task, r.model), []).append(r.model_copy(update={"curve": curve}))
    for (task, model), rs in sorted(groups.items()):
        grid = sorted({s for r in rs for s in r.curve})
        points = []
        for step in grid:
            values = []
            for r in rs:
                known = [(s, v) for s, v in sorted(r.curve.items()) if s <= step and v is not None]
                if known:
                    values.append(known[-1][1])
            if values:
                points.append((step, statistics.fmean(values), _stderr(values) or 0.0))
        out.setdefault(task, {})[model] = points
    return out


Axis = Literal["seconds", "tokens"]


class AnytimePoint(BaseModel):
    """The mean normalized score an actor's runs had reached at a budget ``x``."""

    x: float
    mean: float
    stderr: float = 0.0
    runs: int


def trajectory(values: Mapping[int, float], at: Mapping[int, float]) -> list[tuple[float, float]]:
    """A run's (budget spent, normalized score) points, in step order, from the origin.

    ``values``: step -> normalized score; ``at``: step -> seconds or tokens at that step. Every
    run starts at (0, 0): its workspace is the task's ``env/``, the baseline anchor, unless
    step 0 itself was scored. A scored step whose budget is unknown (no trace time) is skipped.
    The budget never goes back (a resumed run's clock), so a later step is never drawn earlier.
    """
    points = [(0.0, values.get(0, 0.0))]
    for step in sorted(values):
        if step == 0 or step not in at:
            continue
        points.append((max(float(at[step]), points[-1][0]), values[step]))
    return points


def anytime_curve(trajectories: list[list[tuple[float, float]]]) -> list[AnytimePoint]:
    """Mean ± stderr over runs of the score each had *at* budget x, on the union of the runs'
    budgets: a run's score at x is its latest point at or before x (the workspace it would
    hand in if stopped there); a run that ended earlier keeps its final score."""
    grid = sorted({x for t in trajectories for x, _ in t})
    out = []
    for x in grid:
        values = []
        for t in trajectories:
            known = [v for px, v in t if px <= x]
            if known:
                values.append(known[-1])
        if values:
            out.append(AnytimePoint(x=x, mean=statistics.fmean(values), stderr=_stderr(values) or 0.0,
                                    runs=len(values)))
    return out


def anytime_curves(runs: list[RunRecord], axis: Axis = "seconds") -> dict[str, dict[str, list[AnytimePoint]]]:
    """task -> actor (model label; ``human`` for people in the TUI) -> normalized score against
    wall-clock seconds or tokens. Only runs with a normalized score at some step take part;
    against tokens, an actor whose runs spent none (a person, the baseline agent) is left out,
    since every point would sit at 0."""
    groups: dict[tuple[str, str], list[list[tuple[float, float]]]] = {}
    for r in runs:
        if not r.normalized_curve:
            continue
        at = r.step_seconds if axis == "seconds" else r.step_tokens
        if axis == "tokens":
            if not any(at.values()):
                continue
            at = {step: at.get(step, _tokens_before(at, step)) for step in r.normalized_curve}
        groups.setdefault((r.task, r.model), []).append(trajectory(r.normalized_curve, at))
    out: dict[str, dict[str, list[AnytimePoint]]] = {}
    for (task, model), trajectories in sorted(groups.items()):
        out.setdefault(task, {})[model] = anytime_curve(trajectories)
    return out


def _tokens_before(cumulative: Mapping[int, int], step: int) -> int:
    """Tokens spent by ``step`` when no call was made for it (an action run without a model
    call): the total of the last step that made one."""
    earlier = [s for s in cumulative if s <= step]
    return cumulative[max(earlier)] if earlier else 0


def anytime_json(runs: list[RunRecord]) -> dict[str, dict[str, dict[str, list[dict[str, float]]]]]:
    """task -> actor -> {"seconds": [...], "tokens": [...]} as plain data (``--json``)."""
    out: dict[str, dict[str, dict[str, list[dict[str, float]]]]] = {}
    for axis in ("seconds", "tokens"):
        for task, curves in anytime_curves(runs, axis).items():
            for model, points in curves.items():
                out.setdefault(task, {}).setdefault(model, {"seconds": [], "tokens": []})[axis] = [
                    p.model_dump() for p in points]
    return out


def plot_notes(runs: list[RunRecord]) -> list[str]:
    """What the plots cannot show and how to get it (said by ``labcoat report --plots``)."""
    if not any(len(r.curve) > 1 for r in runs):
        return ["no run has per-step scores, so each improvement plot is a single point per run: "
                "`labcoat score RUN_DIR --all-steps` (or `labcoat batch --curve-points N`) "
                "scores the steps"]
    return []


def _legend_outside(ax) -> None:
    """Legends to the right of the axes, where they never cover a curve or a point."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def write_plots(rows: list[Row], runs: list[RunRecord], folder: str | Path) -> list[Path]:
    """PNG files: improvement over steps per model (one per task) with the task's success
    threshold; success rate vs tokens. A model has one colour on every plot; runs that never
    started (a batch combination that failed first) spent no tokens and are not plotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import MaxNLocator

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    models = sorted({r.model for r in rows} | {r.model for r in runs})
    color = {m: f"C{i % 10}" for i, m in enumerate(models)}
    for task, curves in improvement_curves(runs).items():
        fig, ax = plt.subplots(figsize=(8.4, 4.2))
        for model, pts in curves.items():
            xs = [p[0] for p in pts]
            ys = [100 * p[1] for p in pts]
            es = [100 * p[2] for p in pts]
            ax.plot(xs, ys, marker="o", ms=3, label=model, color=color[model])
            ax.fill_between(xs, [y - e for y, e in zip(ys, es, strict=True)],
                            [y + e for y, e in zip(ys, es, strict=True)], alpha=0.2, color=color[model])
        thresholds = {r.score.threshold for r in runs
                      if r.task == task and r.score is not None and r.score.threshold is not None}
        for t in sorted(thresholds):
            ax.axhline(100 * t, color="green", ls="--", lw=1, label=f"success threshold {t:.0%}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.axhline(0, color="grey", lw=0.8)
        ax.set(xlabel="step", ylabel="improvement over baseline (%)",
               title=f"{task}: improvement over steps (mean ± stderr)")
        _legend_outside(ax)
        fig.tight_layout()
        path = folder / f"improvement_{_safe(task)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    written += _anytime_plots(plt, runs, folder, color)
    fig, ax = plt.subplots(figsize=(8.4, 4.2))
    markers = "osD^v<>ph*"
    tasks = sorted({r.task for r in rows})
    for r in rows:
        started = [x.tokens for x in runs
                   if x.task == r.task and x.model == r.model and x.outcome != "not_run"]
        if not started:
            continue
        ax.errorbar(statistics.fmean(started), 100 * r.success_rate,
                    yerr=100 * (r.success_rate_stderr or 0.0),
                    marker=markers[tasks.index(r.task) % len(markers)], capsize=3,
                    color=color[r.model], label=f"{r.model} · {r.task}")
    ax.set(xlabel="mean tokens per run (runs that started)", ylabel="success rate (%)",
           title="success rate vs tokens spent")
    ax.set_ylim(-5, 105)
    _legend_outside(ax)
    fig.tight_layout()
    path = folder / "success_vs_tokens.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _anytime_plots(plt, runs: list[RunRecord], folder: Path, color: Mapping[str, str]) -> list[Path]:
    """One PNG per task: normalized score against wall-clock (left) and tokens (right), every
    actor a step curve (mean ± stderr over its runs), people included on the clock panel."""
    by_seconds, by_tokens = anytime_curves(runs, "seconds"), anytime_curves(runs, "tokens")
    written = []
    for task, curves in by_seconds.items():
        fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.2), sharey=True)
        for ax, panel, xlabel in ((left, curves, "wall-clock seconds since the run started"),
                                  (right, by_tokens.get(task, {}), "tokens spent")):
            right_edge = max((p.x for pts in panel.values() for p in pts), default=0.0)
            for model, pts in panel.items():
                xs, ys, es = [p.x for p in pts], [p.mean for p in pts], [p.stderr for p in pts]
                if xs[-1] < right_edge:  # runs that ended keep their final score at larger budgets
                    xs, ys, es = [*xs, right_edge], [*ys, ys[-1]], [*es, es[-1]]
                ax.step(xs, ys, where="post", label=model if ax is left else None, color=color.get(model))
                ax.fill_between(xs, [y - e for y, e in zip(ys, es, strict=True)],
                                [y + e for y, e in zip(ys, es, strict=True)], step="post",
                                alpha=0.2, color=color.get(model))
            for level, name in ((0, "baseline"), (1, "reference")):
                ax.axhline(level, color="grey" if level == 0 else "green", ls=":" if level else "-",
                           lw=0.8, label=name if ax is left else None)
            ax.set(xlabel=xlabel)
            if not panel:
                ax.text(0.5, 0.5, "no runs spent tokens", ha="center", va="center",
                        transform=ax.transAxes, color="grey")
        left.set(ylabel="normalized score (0 baseline, 1 reference)")
        fig.suptitle(f"{task}: anytime score (mean ± stderr over runs)")
        handles, labels = left.get_legend_handles_labels()  # every actor is on the clock panel
        right.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                     borderaxespad=0)
        fig.tight_layout()
        path = folder / f"anytime_{_safe(task)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def dump(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)
