"""The report's PNG plots (matplotlib, imported only when plotting), drawn from the same
numbers as the table and the curves."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path

from environments.reports.curves import CurvePoint, anytime_curves, improvement_curves
from environments.reports.records import RunRecord
from environments.reports.table import Row


def plot_notes(runs: list[RunRecord]) -> list[str]:
    """What the plots cannot show and how to get it (said by ``labcoat report runs --plots``)."""
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
            xs = [p.x for p in pts]
            ys = [100 * p.mean for p in pts]
            es = [100 * p.stderr for p in pts]
            ax.plot(xs, ys, marker="o", ms=3, label=model, color=color[model])
            _say_n(ax, pts, 100)
            ax.fill_between(xs, [y - e for y, e in zip(ys, es, strict=True)],
                            [y + e for y, e in zip(ys, es, strict=True)], alpha=0.2, color=color[model])
        thresholds = {r.score.threshold for r in runs
                      if r.task == task and r.score is not None and r.score.threshold is not None}
        for t in sorted(thresholds):
            ax.axhline(100 * t, color="green", ls="--", lw=1, label=f"success threshold {t:.0%}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.axhline(0, color="grey", lw=0.8)
        ax.set(xlabel="step", ylabel="improvement over baseline (%)",
               title=f"{task}: improvement over steps, on test, post hoc\n(mean ± stderr over the runs that reached each step; n where it changes)")
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
    actor a step curve (mean ± stderr over its runs still going), people included on the clock
    panel."""
    by_seconds, by_tokens = anytime_curves(runs, "seconds"), anytime_curves(runs, "tokens")
    written = []
    for task, curves in by_seconds.items():
        fig, (left, right) = plt.subplots(1, 2, figsize=(11.5, 4.2), sharey=True)
        for ax, panel, xlabel in ((left, curves, "wall-clock seconds since the run started"),
                                  (right, by_tokens.get(task, {}), "tokens spent")):
            for model, pts in panel.items():
                xs, ys, es = [p.x for p in pts], [p.mean for p in pts], [p.stderr for p in pts]
                _say_n(ax, pts, 1)
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
        fig.suptitle(f"{task}: anytime score on test, post hoc: never seen by a search (mean ± "
                     "stderr over the runs still going at x;\nn where it changes; a curve ends "
                     "where its last run ended)")
        handles, labels = left.get_legend_handles_labels()  # every actor is on the clock panel
        right.legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                     borderaxespad=0)
        fig.tight_layout()
        path = folder / f"anytime_{_safe(task)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _say_n(ax, points: list[CurvePoint], scale: float) -> None:
    """Write how many runs a curve averages wherever that number changes."""
    last = None
    for p in points:
        if p.runs != last:
            ax.annotate(f"n={p.runs}", (p.x, scale * p.mean), fontsize=6, color="dimgrey",
                        textcoords="offset points", xytext=(2, 4))
            last = p.runs
