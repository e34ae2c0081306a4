"""``labcoat report``: a task × model table over run directories, plots, and comparisons."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tui.cli.common import JSON_OPT, WIDE_OPT, Col, console, err_console, fail, print_table

#: what a person reading the report at 80 columns needs; the rest comes with --wide
NARROW = {"task", "model", "runs", "success", "mean improvement", "cost $"}


def report_columns(names: list[str]) -> list[Col]:
    return [Col(n, key=n in ("task", "model"), extra=n not in NARROW,
                justify="left" if n in ("task", "model") else "right") for n in names]


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)


def report_cmd(
    runs_dir: Path = typer.Argument(..., help="a folder of runs (searched recursively), e.g. a batch"),
    markdown: bool = typer.Option(False, "--markdown", help="a Markdown table on stdout"),
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
    plots: Optional[Path] = typer.Option(None, "--plots", help="write PNG plots into this folder"),
    compare: Optional[tuple[str, str]] = typer.Option(
        None, "--compare",
        help="two models (labels in the table) or two run folders, side by side on shared tasks"),
    where: Optional[list[str]] = typer.Option(
        None, "--where", help="only runs whose run.json has KEY=VALUE (repeatable): backend=docker, "
        "gpu=none, cores=16, mode=tools, kind=baseline, validations=0, or any dotted key "
        "(config.context.keep_last=3, manifest.machine.cpu_model=...)"),
) -> None:
    """Success rate, improvement ± stderr, steps, tokens, cost, time and failures per task × model."""
    from environments.report import (
        COLUMNS,
        build_report,
        comparison_markdown,
        dump,
        load_runs,
        parse_where,
        plot_notes,
        report_json,
        row_cells,
        to_markdown,
        write_plots,
    )
    from environments.report import (
        compare as compare_rows,
    )

    if not runs_dir.exists():
        fail(f"{runs_dir}: no such folder")
    try:
        filters = parse_where(where or [])
    except ValueError as err:
        fail(str(err))
    a, b = compare if compare else (None, None)
    if a is not None and Path(a).is_dir() and Path(b).is_dir():  # two folders, each its own "model"
        runs = load_runs(a, label=a, where=filters) + load_runs(b, label=b, where=filters)
    else:
        runs = load_runs(runs_dir, where=filters)
    if not runs:
        fail(f"{runs_dir}: no run directories found" + (" matching --where" if filters else ""))
    rows = build_report(runs)
    if a is not None:
        labels = {r.model for r in rows}
        for name in (a, b):
            if name not in labels:
                fail(f"--compare: {name!r} is neither a model in the report ({', '.join(sorted(labels))}) "
                     "nor a folder")
        comparisons = compare_rows(rows, a, b)
        if as_json:
            typer.echo(dump([c.model_dump() for c in comparisons]))
        else:
            typer.echo(comparison_markdown(comparisons, a, b))
    elif as_json:
        typer.echo(dump(report_json(rows, runs)))
    elif markdown:
        typer.echo(to_markdown(rows))
    else:
        print_table(f"{len(runs)} runs in {runs_dir}", report_columns(COLUMNS),
                    [row_cells(row) for row in rows], wide=wide)
        console.print("failures count as runs without success; infrastructure failures are "
                      "also shown on their own.")
    if plots is not None:
        for path in write_plots(rows, runs, plots):
            err_console.print(f"wrote {path}")
        for note in plot_notes(runs):
            err_console.print(f"[yellow]note:[/] {note}", markup=True, highlight=False)
