"""``labcoat uplift``: each model × seed with and without the task's method tools, paired."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

import typer

from agent.config import build, options
from tui.cli.batch import PER_COMBINATION, _split, check_models, default_models
from tui.cli.common import (
    JSON_OPT,
    SANDBOX_OPT,
    WIDE_OPT,
    Col,
    console,
    err_console,
    fail,
    isolating,
    print_table,
)
from tui.cli.run import config_options
from tui.terminal_text import safe_line, safe_text


def register(app: typer.Typer) -> None:
    app.command("uplift")(uplift_cmd)


COLUMNS = [Col("model"), Col("pairs", justify="right"), Col("with", justify="right"),
           Col("without", justify="right"), Col("uplift [95% CI]", justify="right"),
           Col("tokens with/without", justify="right", extra=True),
           Col("cost $ with/without", justify="right", extra=True),
           Col("incomplete", justify="right", extra=True)]


def _cells(row) -> list[str]:
    from agent.uplift import interval_text

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    return [row.model, str(row.pairs), f(row.mean_with), f(row.mean_without), interval_text(row.uplift),
            f"{row.mean_tokens_with:,.0f} / {row.mean_tokens_without:,.0f}",
            f"{row.cost_with:.4f} / {row.cost_without:.4f}", str(row.incomplete)]


@config_options(options(exclude=(*PER_COMBINATION, "method_tools")))  # each arm sets it
def uplift_cmd(
    task: Optional[str] = typer.Argument(None, help="a suite task or task folder with method tools"),
    models: Optional[str] = typer.Option(None, "--models", help="comma-separated model strings "
                                         "(default: as labcoat run)"),
    seeds: int = typer.Option(3, "--seeds", min=1, help="seeds 0..N-1, each run in both arms"),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="runs at the same time"),
    executor: str = typer.Option("local", "--executor", help="local | ray"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="a Ray cluster"),
    folder: Optional[Path] = typer.Option(  # --batch-dir: as labcoat batch once spelled it
        None, "--dir", "--batch-dir", metavar="DIR",
        help="the experiment's folder (default: runs/uplift-<task>-<time>)"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="continue (or just report) the "
                                          "experiment in this folder"),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="run failed runs again"),
    sandbox: str = SANDBOX_OPT,
    curve_points: Optional[int] = typer.Option(
        None, "--curve-points", min=0, help="also score N steps per run (0: all), for anytime curves"),
    plot: Optional[Path] = typer.Option(None, "--plot", help="write the uplift plot (PNG) here"),
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
    options: dict[str, Any] | None = None,
) -> None:
    """Do the task's method tools help? Each model × seed with and without them, paired.

    Reports the paired difference in normalized score (95% t-interval), tokens and cost."""
    from agent.uplift import (
        SPEC_FILE,
        UpliftSpec,
        report_json,
        run_uplift,
        uplift_report,
        write_plot,
    )

    given = {k: v for k, v in (options or {}).items() if v is not None}
    spec = None
    if resume is not None:
        if task or models or given:
            fail("--resume takes the spec from the folder; leave out TASK, --models and the run options")
        if not (resume / SPEC_FILE).is_file():
            fail(f"{resume}: no {SPEC_FILE}; not an uplift folder")
        root = resume
    else:
        if not task:
            fail("give TASK (or --resume DIR)")
        try:
            actor, budgets = build(given)
        except ValueError as err:
            fail(str(err))
        isolating(sandbox)
        spec = UpliftSpec(task=task, models=_split(models) or [default_models(actor)],
                          seeds=list(range(seeds)), actor=actor, budgets=budgets, sandbox=sandbox,
                          score_points=curve_points)
        check_models(spec.batch_spec(True))
        root = folder or Path("runs") / time.strftime(f"uplift-{Path(task).name}-%Y%m%d-%H%M%S")
    if not as_json:
        err_console.print(safe_line(f"uplift folder: {root}\nto resume: ",
                                    (f"labcoat uplift --resume {root}", "bold")))
    last = [""]

    def on_progress(arm: str, p) -> None:
        text = f"{arm}: done {p.done} · running {p.running} · failed {p.failed} · pending {p.pending}"
        if not as_json and text != last[0]:
            err_console.print(safe_text(f"[{p.done + p.failed}/{p.total}] {text}"), highlight=False)
            last[0] = text

    try:
        run_uplift(root, spec, jobs=jobs, executor=executor, ray_address=ray_address,
                   retry_failed=retry_failed, on_progress=on_progress,
                   on_measure=lambda t: as_json or err_console.print(
                       safe_text(f"{t}: measuring its baseline first")))
        from tui.cli.report import skipped
        report = uplift_report(root, on_skip=skipped)
    except KeyboardInterrupt:
        err_console.print(safe_text(f"interrupted; resume with: labcoat uplift --resume {root}"))
        raise typer.Exit(130) from None
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        fail(str(err))
    if as_json:
        typer.echo(json.dumps(report_json(report), indent=2, default=str))
    else:
        print_table(f"{report.task}: method-tool uplift (normalized score, paired by seed)", COLUMNS,
                    [_cells(r) for r in report.rows], wide=wide)
        for p in report.pairs:
            if p.missing:
                err_console.print(safe_line(("incomplete", "yellow"),
                                            f" {p.model} seed {p.seed}: {p.missing}"), highlight=False)
        console.print("uplift = with − without per seed; failed submissions count as 0 (the baseline).")
    if plot is not None:
        err_console.print(safe_text(f"wrote {write_plot(report, plot)}"))
