"""Method-tool uplift: do a task's paper methods, offered as tools, make an actor better?

Each (model, seed) runs twice on one task: once with the task's method tools (the treatment)
and once with none (the control; the same task, prompt and budgets, only the tool actions
absent, so an actor that names one is told the action is unknown). Pairing by seed removes the
variation both arms share (a model's sampling under that seed, the task's randomness through
``LABCOAT_SEED``), so the estimate is a Student t-interval (95%, two-sided) on the paired
differences of normalized score, not a comparison of two independent means.

An uplift folder holds ``uplift.json`` (the :class:`UpliftSpec`) and one batch per arm
(``with-tools/``, ``without-tools/``), each an ordinary resumable batch (``agent/batch.py``):
rerunning the command continues whatever was left. Everything after running is pure: the runs
are read back as report records (``environments/reports/``) and paired here.

A run's value is its final score's normalized score, failures of the submission counting as 0
(the baseline anchor; :func:`environments.reports.step_value`). A pair one of whose runs has no
value yet (not finished, not scored, an infrastructure failure) is *incomplete*: listed, never
silently dropped, and left out of the interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent.batch import BatchResult, BatchSpec, Progress, run_batch
from agent.config import ActorConfig
from environments.record.runs import Budgets
from environments.record.snapshots import _fsync_write
from environments.reports import RunRecord, load_runs, step_value
from environments.reports.records import OnSkip
from environments.scoring.timing import t975

SPEC_FILE = "uplift.json"
ARMS: dict[bool, str] = {True: "with-tools", False: "without-tools"}


class UpliftSpec(BaseModel):
    """What an uplift experiment runs; stored in ``uplift.json`` so a rerun needs nothing else."""

    task: str
    models: list[str]
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2])
    actor: ActorConfig = Field(default_factory=ActorConfig)
    budgets: Budgets = Field(default_factory=Budgets)
    sandbox: str = "auto"
    score_points: int | None = Field(None, description="also score N steps per run (anytime curves)")

    def batch_spec(self, tools: bool) -> BatchSpec:
        """One arm as a batch: the same everything, only ``method_tools`` differs."""
        actor = self.actor.model_copy(update={"method_tools": tools})  # the arm decides, not the actor
        return BatchSpec(tasks=[self.task], models=self.models, seeds=self.seeds, actor=actor,
                         budgets=self.budgets, sandbox=self.sandbox, score=True,
                         score_points=self.score_points, method_tools=tools)


def arm_dir(root: str | Path, tools: bool) -> Path:
    return Path(root) / ARMS[tools]


def open_uplift(root: str | Path, spec: UpliftSpec | None) -> UpliftSpec:
    """The folder's spec: ``spec`` stored on first use, else read back (and checked against it)."""
    path = Path(root) / SPEC_FILE
    stored = UpliftSpec.model_validate_json(path.read_text()) if path.is_file() else None
    if stored is None:
        if spec is None:
            raise FileNotFoundError(f"{root}: no {SPEC_FILE}; not an uplift folder")
        Path(root).mkdir(parents=True, exist_ok=True)
        _fsync_write(path, spec.model_dump_json(indent=2))
        return spec
    if spec is not None and spec != stored:
        raise ValueError(f"{root} holds an uplift experiment with a different spec; rerun it with "
                         f"--resume {root} or choose another --dir")
    return stored


def check_uplift_task(task_ref: str) -> None:
    """An experiment that cannot measure anything is a usage error before any run starts."""
    from environments.task.anchors import load_anchors
    from environments.task.suite import resolve_task

    task = resolve_task(task_ref)
    if not task.tools:
        raise ValueError(f"task {task.name} offers no method tools (task.toml `tools`): both arms "
                         "would be the same")
    if load_anchors(task.root) is None:
        raise ValueError(f"task {task.name} has no anchors.toml, so no normalized score to compare")


def run_uplift(root: str | Path, spec: UpliftSpec | None = None, *, jobs: int = 1,
               executor: str = "local", ray_address: str | None = None, retry_failed: bool = False,
               on_progress: Callable[[str, Progress], None] | None = None,
               on_measure: Callable[[str], None] | None = None) -> dict[str, BatchResult]:
    """Run (or continue) both arms, the treatment first; ``spec`` may be left out to resume."""
    if spec is not None:
        check_uplift_task(spec.task)  # before the folder is made: a useless experiment leaves nothing
    spec = open_uplift(root, spec)
    results = {}
    for tools, name in ARMS.items():
        results[name] = run_batch(
            arm_dir(root, tools), spec.batch_spec(tools), jobs=jobs, executor=executor,
            ray_address=ray_address, retry_failed=retry_failed, on_measure=on_measure,
            on_progress=(lambda p, name=name: on_progress(name, p)) if on_progress else None)
    return results


# ---- pairing and statistics (pure) ------------------------------------------------------------

class Pair(BaseModel):
    """One (model, seed) with both arms' runs."""

    model: str
    seed: int
    with_tools: float | None
    without_tools: float | None
    tokens_with: int
    tokens_without: int
    cost_with: float
    cost_without: float
    missing: str | None = Field(None, description="why the pair cannot be compared yet")

    @property
    def difference(self) -> float | None:
        if self.with_tools is None or self.without_tools is None:
            return None
        return self.with_tools - self.without_tools


class Interval(BaseModel):
    mean: float
    low: float | None = Field(None, description="None with fewer than 2 pairs")
    high: float | None = None
    n: int


def paired_interval(differences: list[float]) -> Interval | None:
    """Mean of the paired differences with its 95% Student t-interval (n-1 degrees of freedom)."""
    if not differences:
        return None
    mean = statistics.fmean(differences)
    if len(differences) < 2:
        return Interval(mean=mean, n=1)
    half = t975(len(differences) - 1) * statistics.stdev(differences) / math.sqrt(len(differences))
    return Interval(mean=mean, low=mean - half, high=mean + half, n=len(differences))


def run_value(record: RunRecord | None) -> tuple[float | None, str | None]:
    """A run's normalized score for the comparison, or why it has none."""
    if record is None:
        return None, "no run"
    if record.score is None:
        return None, f"not scored ({record.status})"
    value = step_value(record.score, record.anchored)
    if value is None:
        return None, record.score.failure or "no normalized score"
    return value, None


def pair_runs(with_runs: list[RunRecord], without_runs: list[RunRecord],
              models: list[str], seeds: list[int]) -> list[Pair]:
    """Every (model, seed) of the spec, matched across the arms by the runs' model string
    (``RowKey.who``) and seed; of several runs of one pair (a retried one) the latest counts."""
    def index(runs: list[RunRecord]) -> dict[tuple[str, int], RunRecord]:
        return {(r.key.who, r.seed): r for r in sorted(runs, key=lambda r: r.created_at)}

    treated, control = index(with_runs), index(without_runs)
    pairs = []
    for model in models:
        for seed in seeds:
            a, b = treated.get((model, seed)), control.get((model, seed))
            (va, why_a), (vb, why_b) = run_value(a), run_value(b)
            missing = "; ".join(f"{arm}: {why}" for arm, why in
                                ((ARMS[True], why_a), (ARMS[False], why_b)) if why) or None
            pairs.append(Pair(model=model, seed=seed, with_tools=va, without_tools=vb,
                              tokens_with=a.tokens if a else 0, tokens_without=b.tokens if b else 0,
                              cost_with=a.cost if a else 0.0, cost_without=b.cost if b else 0.0,
                              missing=missing))
    return pairs


class UpliftRow(BaseModel):
    """One model's uplift: the paired difference and what each arm spent."""

    model: str
    pairs: int = Field(description="complete pairs (the interval's n)")
    incomplete: int
    mean_with: float | None
    mean_without: float | None
    uplift: Interval | None
    mean_tokens_with: float
    mean_tokens_without: float
    cost_with: float
    cost_without: float


def uplift_rows(pairs: list[Pair]) -> list[UpliftRow]:
    """One row per model: its pairs' mean difference with its interval, and what each arm spent."""
    rows = []
    for model in dict.fromkeys(p.model for p in pairs):
        mine = [p for p in pairs if p.model == model]
        done = [p for p in mine if p.difference is not None]
        rows.append(UpliftRow(
            model=model, pairs=len(done), incomplete=len(mine) - len(done),
            mean_with=statistics.fmean([p.with_tools for p in done]) if done else None,
            mean_without=statistics.fmean([p.without_tools for p in done]) if done else None,
            uplift=paired_interval([p.difference for p in done]),
            mean_tokens_with=statistics.fmean([p.tokens_with for p in mine]) if mine else 0.0,
            mean_tokens_without=statistics.fmean([p.tokens_without for p in mine]) if mine else 0.0,
            cost_with=sum(p.cost_with for p in mine), cost_without=sum(p.cost_without for p in mine),
        ))
    return rows


class UpliftReport(BaseModel):
    task: str
    rows: list[UpliftRow]
    pairs: list[Pair]


def uplift_report(root: str | Path, on_skip: OnSkip | None = None) -> UpliftReport:
    """Read both arms' runs back and pair them (reading is all it does); ``on_skip`` is told
    each run folder that cannot be read (``load_runs``), which then pairs as missing."""
    spec = open_uplift(root, None)
    arms = {tools: load_runs(arm_dir(root, tools), on_skip=on_skip)
            if arm_dir(root, tools).is_dir() else []
            for tools in ARMS}
    pairs = pair_runs(arms[True], arms[False], spec.models, spec.seeds)
    from environments.task.suite import resolve_task

    try:
        task = resolve_task(spec.task).name
    except Exception:  # noqa: BLE001 - the report must not need the task folder
        task = Path(spec.task).name
    return UpliftReport(task=task, rows=uplift_rows(pairs), pairs=pairs)


def interval_text(i: Interval | None) -> str:
    if i is None:
        return "n/a"
    if i.low is None:
        return f"{i.mean:+.3f} (1 pair: no interval)"
    return f"{i.mean:+.3f} [{i.low:+.3f}, {i.high:+.3f}]"


def write_plot(report: UpliftReport, path: str | Path) -> Path:
    """A PNG: each model's paired uplift with its 95% interval, and each pair's difference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(8.4, 1.6 + 0.6 * max(1, len(report.rows))))
    for y, row in enumerate(report.rows):
        diffs = [p.difference for p in report.pairs if p.model == row.model and p.difference is not None]
        ax.scatter(diffs, [y] * len(diffs), color="grey", s=12, zorder=2)  # one point a seed
        if row.uplift is not None:
            low = row.uplift.low if row.uplift.low is not None else row.uplift.mean
            high = row.uplift.high if row.uplift.high is not None else row.uplift.mean
            ax.errorbar(row.uplift.mean, y, xerr=[[row.uplift.mean - low], [high - row.uplift.mean]],
                        fmt="o", color=f"C{y % 10}", capsize=4, zorder=3)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(range(len(report.rows)), [f"{_short(r.model)} (n={r.pairs})" for r in report.rows], fontsize=8)
    ax.set(xlabel="normalized score, with tools − without (mean and 95% paired t-interval)",
           title=f"{report.task}: method-tool uplift")
    ax.set_ylim(-0.8, len(report.rows) - 0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _short(label: str, n: int = 36) -> str:
    """A tick label that leaves the plot room (a scripted model's label is a whole path)."""
    return label if len(label) <= n else "…" + label[-(n - 1):]


def report_json(report: UpliftReport) -> dict[str, Any]:
    """``--json``: the rows, and every pair with its difference."""
    return {"task": report.task, "rows": [r.model_dump() for r in report.rows],
            "pairs": [{**p.model_dump(), "difference": p.difference} for p in report.pairs]}
