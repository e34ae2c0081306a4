"""``labcoat report``: a task × model table over run directories, plots, and comparisons."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from tui.cli.common import (
    JSON_OPT,
    WIDE_OPT,
    Col,
    console,
    echo,
    err_console,
    fail,
    print_table,
)
from tui.terminal_text import safe_text

#: what a person reading the report at 80 columns needs; the rest comes with --wide
NARROW = {"task", "model", "runs", "success", "mean improvement", "cost $"}


def report_columns(names: list[str]) -> list[Col]:
    return [Col(n, key=n in ("task", "model"), extra=n not in NARROW,
                justify="left" if n in ("task", "model") else "right") for n in names]


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)


def report_cmd(
    runs_dir: Optional[Path] = typer.Argument(None, help="a folder of runs (searched recursively), "
                                              "e.g. a batch"),
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
    family: Optional[Path] = typer.Option(
        None, "--family", help="a run directory: it, the run it was forked from and every fork, "
        "compared (score per step after each fork point, final score)"),
    diff: bool = typer.Option(False, "--diff", help="with --family: each fork's final workspace "
                              "diffed against the run it was forked from"),
    tree: Optional[Path] = typer.Option(
        None, "--tree", help="a tree run's directory (--agent tree): its nodes (parent, op, status, "
        "metric, seconds, plan) with the best marked"),
) -> None:
    """Success rate, improvement ± stderr, steps, tokens, cost, time and failures per task × model."""
    if tree is not None:
        if runs_dir is not None or compare or where or plots or family is not None or diff:
            fail("--tree RUN_DIR lists one tree run's nodes: give it alone (with --json, "
                 "--markdown or --wide)")
        return tree_report(tree, as_json=as_json, markdown=markdown, wide=wide)
    if family is not None:
        if runs_dir is not None or compare or where or plots:
            fail("--family RUN_DIR compares one run's forks: give it alone (with --json, "
                 "--markdown or --diff)")
        return family_report(family, as_json=as_json, markdown=markdown, diff=diff, wide=wide)
    if diff:
        fail("--diff goes with --family RUN_DIR")
    if runs_dir is None:
        fail("give a RUNS_DIR (or --family RUN_DIR)")
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
            echo(comparison_markdown(comparisons, a, b))
    elif as_json:
        typer.echo(dump(report_json(rows, runs)))
    elif markdown:
        echo(to_markdown(rows))
    else:
        print_table(f"{len(runs)} runs in {runs_dir}", report_columns(COLUMNS),
                    [row_cells(row) for row in rows], wide=wide)
        console.print("failures count as runs without success; infrastructure failures are "
                      "also shown on their own.")
    if plots is not None:
        for path in write_plots(rows, runs, plots):
            err_console.print(safe_text(f"wrote {path}"))
        for note in plot_notes(runs):
            err_console.print(Text.assemble(("note:", "yellow"), " ", safe_text(note)), highlight=False)


def family_report(run_dir: Path, *, as_json: bool, markdown: bool, diff: bool, wide: bool) -> None:
    """``labcoat report --family RUN_DIR``: the original, its forks, and how they continued."""
    from environments.family import (
        FAMILY_COLUMNS,
        diff_workspaces,
        family_markdown,
        load_family,
        member_cells,
    )
    from environments.report import dump
    from environments.runs import RunDir

    if not (run_dir / "run.json").exists():
        fail(f"{run_dir}: not a run directory (no run.json)")
    fam = load_family(run_dir)
    by_id = {m.run_id: m for m in fam.members}
    diffs = [diff_workspaces(RunDir.open(by_id[m.parent].path), RunDir.open(m.path))
             for m in fam.members if diff and m.parent in by_id]
    if as_json:
        typer.echo(dump({"members": [m.model_dump() for m in fam.members],
                         "diffs": [d.model_dump() for d in diffs]}))
        return
    if markdown:
        echo(family_markdown(fam))
    else:
        cols = [Col(n, key=n == "run", extra=n in ("forked from", "status", "score after the fork point"),
                    justify="right" if n in ("at", "steps (own)") else "left") for n in FAMILY_COLUMNS]
        print_table(f"{len(fam.members)} runs of {fam.root.run_id}'s family", cols,
                    [member_cells(m) for m in fam.members], wide=wide)
        if len(fam.members) == 1:
            console.print("no forks yet: labcoat run --fork RUN_DIR --at K starts one", highlight=False)
    for d in diffs:
        echo(f"\n{d.b} vs {d.a}: " + (", ".join(f"{f.change} {f.path}" for f in d.files)
                                     or "identical final workspaces"))
        for f in d.files:  # the actors' files: their bytes are never the terminal's
            echo(f.diff.rstrip("\n") if f.diff else f"  {f.path}: {f.note}" if f.note else "")


def tree_report(run_dir: Path, *, as_json: bool, markdown: bool, wide: bool) -> None:
    """``labcoat report --tree RUN_DIR``: every node of a tree run, the best marked."""
    from tui.cli.tree_report import (
        TreeReportError,
        footer,
        header,
        load_tree_report,
        rich_cells,
        tree_columns,
        tree_markdown,
    )

    try:
        report = load_tree_report(run_dir)
    except TreeReportError as err:
        fail(str(err))
        raise  # unreachable: fail() exits
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    elif markdown:
        echo(tree_markdown(report), nl=False)
    else:
        print_table(header(report), tree_columns(report),
                    rich_cells(report, None if wide else console.width), wide=wide)
        console.print(safe_text(footer(report)), highlight=False)
