"""``labcoat report compute RUN [RUN ...]``: the score against compute and against wall clock,
so a pool on 2 workers, one on 8 and an ordinary run compare.

For each run, its search as it went (:class:`ComputePoint`: after each scored step or pool
node, the best ``search`` score so far, the seconds since the run began (a pool's Ray start
included) and, where the trace has them, the CPU seconds spent so far), then the best reached
by each mark: wall
seconds and CPU seconds, the same marks for every run (``--wall``, ``--cpu``; by default
quarters of the longest run). A pool's nodes carry their CPU seconds (``rusage`` or ``wall x
cpus``, :mod:`agent.pool.worker`); an ordinary run's steps carry wall time only, so its CPU
columns are empty and its row says ``wall only``. The search scores are the harness's on the
hidden ``search`` split (a pool's nodes, Validate Submission, Score Candidate on ``search``);
``test`` is the run's ``labcoat score`` result, where one was written.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from agent.pool.records import has_pool, nodes_of
from agent.tree.view import run_metric
from environments.acting.pool_node import RECORD_NODE
from environments.record.runs import RunDir, RunMeta, Step
from environments.scoring.score import load_result
from tui.cli.tree_report import open_run, pool_curve

MARK_FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # of the longest run, for the default marks


class ComputePoint(BaseModel):
    """The best search score so far, when it was reached in wall seconds and CPU seconds."""

    wall_seconds: float = Field(description="since the run began (run.json's created_at)")
    cpu_seconds: float | None = Field(description="spent by its nodes so far (None: the trace has none)")
    best_search: float | None


class Mark(BaseModel):
    seconds: float
    best_search: float | None = Field(description="the best search score reached by then "
                                      "(None: none yet, or no CPU seconds for a CPU mark)")


class RunCompute(BaseModel):
    """One run's search against wall clock and compute."""

    run: str
    path: str
    task: str
    agent: str
    workers: int = Field(description="pool workers; 1 for an ordinary run")
    metric: str
    direction: Literal["higher", "lower"]
    cpu_source: str = Field(description="rusage, wall x cpus (an estimate), both, or wall only "
                            "(an ordinary run: its trace has no CPU seconds)")
    wall_seconds: float = Field(description="from the run's start to its last step")
    cpu_seconds: float | None
    best_search: float | None
    test: float | None = Field(description="labcoat score's result on test, where one was written")
    curve: list[ComputePoint]
    by_wall: list[Mark] = Field(default_factory=list)
    by_cpu: list[Mark] = Field(default_factory=list)


class ComputeReport(BaseModel):
    wall_marks: list[float]
    cpu_marks: list[float]
    runs: list[RunCompute]


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None


def run_start(meta: RunMeta, steps: Sequence[Step]) -> datetime | None:
    """When the run began: its folder's creation (so a pool's Ray start counts, and a resumed
    run's pause), else its first step's start (its end time less its seconds)."""
    from datetime import timedelta

    created = _time(meta.created_at)
    if created is not None:
        return created
    for s in steps:
        at = _time(s.time)
        if at is not None:
            return at - timedelta(seconds=s.seconds)
    return None


def better(a: float, b: float | None, higher: bool) -> bool:
    return b is None or (a > b if higher else a < b)


def step_curve(steps: Sequence[Step], t0: datetime, higher: bool) -> list[ComputePoint]:
    """An ordinary run's search: each step the harness scored on ``search`` (Validate
    Submission, Score Candidate), and its last step, at wall seconds since ``t0``."""
    best, out = None, []
    for s in steps:
        data = s.data if isinstance(s.data, dict) else {}
        value = data.get("value")
        at = _time(s.time)
        if at is None or s.action == RECORD_NODE:
            continue
        if data.get("split") == "search" and isinstance(value, (int, float)) and better(value, best, higher):
            best = float(value)
            out.append(ComputePoint(wall_seconds=round((at - t0).total_seconds(), 3),
                                    cpu_seconds=None, best_search=best))
    last = _time(steps[-1].time) if steps else None
    if last is not None:
        out.append(ComputePoint(wall_seconds=round((last - t0).total_seconds(), 3),
                                cpu_seconds=None, best_search=best))
    return out


def pool_points(steps: Sequence[Step], t0: datetime, higher: bool) -> tuple[list[ComputePoint], str]:
    """A pool's curve (:func:`tui.cli.tree_report.pool_curve`, from its first node's start)
    moved to the run's own start, and where its CPU seconds come from."""
    recs = [r for r, _ in nodes_of(steps)]
    starts = [t for r in recs if (t := _time(r.started_at)) is not None]
    shift = (min(starts) - t0).total_seconds() if starts else 0.0
    points = [ComputePoint(wall_seconds=round(p.wall_seconds + shift, 3), cpu_seconds=p.cpu_seconds,
                           best_search=p.best_search) for p in pool_curve(recs, higher)]
    sources = sorted({r.cpu_source for r in recs if r.cpu_source})
    return points, " + ".join(sources) or "wall only"


def load_run_compute(run_dir: Path) -> RunCompute:
    """One run's curve; :class:`tui.cli.tree_report.TreeReportError` when it is no readable run."""
    run: RunDir = open_run(run_dir)
    steps = [s for s in run.steps(trim=False) if not s.inherited]  # a fork's own steps
    metric, higher = run_metric(run)
    t0 = run_start(run.meta, steps)
    if t0 is None:
        curve, source = [], "wall only"
    elif has_pool(steps):
        curve, source = pool_points(steps, t0, higher)
    else:
        curve, source = step_curve(steps, t0, higher), "wall only"
    last = _time(steps[-1].time) if steps else None
    wall = max([p.wall_seconds for p in curve] + [(last - t0).total_seconds() if last and t0 else 0.0])
    cpus = [p.cpu_seconds for p in curve if p.cpu_seconds is not None]
    result = load_result(run.path)
    pool = getattr(run.meta.config, "pool", None) or {}  # an extra field of run.json's config
    workers = pool.get("workers", 1) if isinstance(pool, dict) else getattr(pool, "workers", 1)
    return RunCompute(
        run=run.meta.run_id, path=str(run.path), task=run.meta.task,
        agent=run.meta.agent + (f" ({run.meta.model})" if run.meta.model else ""),
        workers=int(workers) if run.meta.agent == "pool" else 1, metric=metric,
        direction="higher" if higher else "lower", cpu_source=source,
        wall_seconds=round(wall, 3), cpu_seconds=max(cpus) if cpus else None,
        best_search=curve[-1].best_search if curve else None,
        test=result.value if result is not None and result.split == "test" else None, curve=curve)


def best_by(curve: list[ComputePoint], mark: float, cpu: bool) -> float | None:
    """The best search score of the last point at or before ``mark`` (wall or CPU seconds)."""
    best = None
    for p in curve:
        at = p.cpu_seconds if cpu else p.wall_seconds
        if at is None:
            return None
        if at <= mark:
            best = p.best_search
    return best


def nice(seconds: float) -> float:
    """``seconds`` to two significant digits (a mark people read: 45, 120, 1,800)."""
    if seconds <= 0:
        return 0.0
    return float(f"{seconds:.2g}")


def default_marks(longest: float) -> list[float]:
    return sorted({nice(longest * f) for f in MARK_FRACTIONS if longest > 0})


def compute_report(run_dirs: Sequence[Path], wall: list[float] | None = None,
                   cpu: list[float] | None = None) -> ComputeReport:
    """Every run's curve and its best by each mark (the same marks for every run)."""
    runs = [load_run_compute(d) for d in run_dirs]
    wall = sorted(wall) if wall else default_marks(max((r.wall_seconds for r in runs), default=0))
    cpu = sorted(cpu) if cpu else default_marks(max((r.cpu_seconds or 0 for r in runs), default=0))
    for r in runs:
        r.by_wall = [Mark(seconds=m, best_search=best_by(r.curve, m, False)) for m in wall]
        r.by_cpu = [Mark(seconds=m, best_search=best_by(r.curve, m, True) if r.cpu_seconds is not None
                         else None) for m in cpu]
    return ComputeReport(wall_marks=wall, cpu_marks=cpu, runs=runs)


# ---- presentation ---------------------------------------------------------------------------

def seconds_text(s: float) -> str:
    return f"{s:,.0f}" if s >= 10 else f"{s:.2g}"


def compute_header(report: ComputeReport) -> str:
    tasks = sorted({r.task for r in report.runs})
    metrics = sorted({f"{r.metric or 'metric'} ({r.direction} is better)" for r in report.runs})
    return (f"best search score by wall-clock and CPU seconds: {', '.join(tasks)} · "
            f"{', '.join(metrics)}")


EXTRA = ("agent", "wall s", "cpu s", "cpu from")  # last, and first to give way at 80 columns


def compute_names(report: ComputeReport) -> list[str]:
    """The scores before the descriptions: a narrow terminal drops the rightmost columns."""
    return (["run", "workers", "test"] + [f"≤{seconds_text(m)} s" for m in report.wall_marks]
            + [f"≤{seconds_text(m)} cpu s" for m in report.cpu_marks] + list(EXTRA))


def compute_rows(report: ComputeReport) -> list[list[str]]:
    from tui.cli.common import num

    def cell(x: float | None) -> str:
        return "—" if x is None else num(x)

    return [[r.run, str(r.workers), cell(r.test)] + [cell(m.best_search) for m in r.by_wall]
            + [cell(m.best_search) if r.cpu_seconds is not None else "" for m in r.by_cpu]
            + [r.agent, seconds_text(r.wall_seconds),
               "" if r.cpu_seconds is None else seconds_text(r.cpu_seconds), r.cpu_source]
            for r in report.runs]


def compute_footer(report: ComputeReport) -> str:
    note = ("An empty CPU cell: the run's trace has no CPU seconds (wall only). " if any(
        r.cpu_seconds is None for r in report.runs) else "")
    unscored = [r.run for r in report.runs if r.best_search is None]
    if unscored:
        note += (f"No step of {', '.join(unscored)} was scored on search (its agent never had the "
                 "harness score one: Validate Submission, Score Candidate). ")
    return (note + "— : no search score by then. Wall seconds count from the run's start; CPU "
            "seconds are the nodes' sandbox processes'; --json has each run's curve.")


# ---- charts ---------------------------------------------------------------------------------

CHART_SAMPLES = 56  # columns of the terminal chart: fits 80 columns with its axis labels


def chart_series(report: ComputeReport, *, cpu: bool,
                 samples: int = CHART_SAMPLES) -> dict[str, list[tuple[float, float]]]:
    """Each run's best search score sampled at evenly spaced seconds (wall or CPU) from 0 to the
    longest run's: on a character grid a step curve needs a point per column, since the points
    where the best changed alone leave most of the chart empty. Every run has a series, so it
    keeps its marker from chart to chart; one with no CPU seconds has no points on the CPU
    chart, and a sample before a run's first score or after its end has none either."""
    end = max(((r.cpu_seconds or 0.0) if cpu else r.wall_seconds for r in report.runs), default=0.0)
    series: dict[str, list[tuple[float, float]]] = {r.run: [] for r in report.runs}
    if end <= 0:
        return series
    for r in report.runs:
        if cpu and r.cpu_seconds is None:
            continue
        last = (r.cpu_seconds or 0.0) if cpu else r.wall_seconds
        for i in range(samples):
            x = end * i / (samples - 1)
            y = best_by(r.curve, x, cpu) if x <= last + 1e-9 else None  # the run had ended
            if y is not None:
                series[r.run].append((x, y))
    return series


def compute_charts(report: ComputeReport, width: int = CHART_SAMPLES) -> str:
    """The best search score against wall-clock seconds and, where runs have them, against CPU
    seconds: ``labcoat report compute --plot``."""
    from tui.cli.common import num
    from tui.text_plot import ascii_plot

    parts = []
    for cpu, what in ((False, "wall-clock seconds"), (True, "CPU seconds")):
        series = chart_series(report, cpu=cpu, samples=width)
        if not any(series.values()):
            if cpu:
                parts.append("(no CPU chart: no run's trace has CPU seconds)")
            continue
        end = max(x for pts in series.values() for x, _ in pts)
        end = max(end, max(((r.cpu_seconds or 0.0) if cpu else r.wall_seconds) for r in report.runs))
        parts.append(f"best search score by {what} ({report.runs[0].direction} is better)\n\n" +
                     ascii_plot(series, width=width, height=10, zero=False, y_label=num,
                                x_label=lambda s: f"{seconds_text(s)} s", x_range=(0.0, end)))
    return "\n\n".join(parts) or "No run has a search score to chart."


def write_compute_plot(report: ComputeReport, folder: Path) -> Path:
    """``compute.png`` in ``folder``: the best search score against wall-clock seconds and
    against CPU seconds, one step line per run (``labcoat report compute --plots FOLDER``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from environments.untrusted.text import visible

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, cpu, what in ((axes[0], False, "wall-clock seconds"), (axes[1], True, "CPU seconds")):
        for i, r in enumerate(report.runs):
            pts = [(p.cpu_seconds if cpu else p.wall_seconds, p.best_search) for p in r.curve
                   if p.best_search is not None and (p.cpu_seconds is not None or not cpu)]
            end = r.cpu_seconds if cpu else r.wall_seconds
            if pts and end is not None and end > pts[-1][0]:
                pts.append((end, pts[-1][1]))  # the line runs on to the run's end, as the table's marks do
            if pts:
                label = visible(f"{r.run} ({r.workers} worker{'s' if r.workers != 1 else ''})"
                                ).replace("$", r"\$")  # a run's name is text: no control, no mathtext
                ax.step([x for x, _ in pts], [y for _, y in pts], where="post", marker="o", ms=3,
                        color=f"C{i % 10}", label=label)
        ax.set_xlabel(what)
        ax.set_ylabel(f"best search score ({report.runs[0].direction if report.runs else 'higher'} "
                      "is better)")
        ax.grid(alpha=0.3)
        if not ax.get_legend_handles_labels()[0]:
            ax.text(0.5, 0.5, "no run has CPU seconds" if cpu else "no search score", ha="center",
                    transform=ax.transAxes)
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=min(3, len(labels)))
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    path = folder / "compute.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
