"""``labcoat report runs|family|tree|compute``: a table over run folders, a run's forks, a tree
run's nodes, runs' search against wall clock and compute.

The spellings from before the subcommands (``report RUNS_DIR``, ``report --family RUN_DIR``,
``report --tree RUN_DIR``) still work: :class:`ReportGroup` sends them to :func:`legacy_cmd`,
which says the new spelling in one line on stderr (stdout stays the report's: ``--json``).

At 80 columns a table keeps its headline numbers (success, improvement, normalized score) and
drops the less important columns instead (``--wide`` shows all): :func:`fit` picks the columns
whose words fit, so no header or name is broken mid-word, and the runs table is stacked by
task (one table a task, its name in the title) rather than spend a column on it.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from environments.untrusted.words import plural
from tui.cli.common import (
    JSON_OPT,
    WIDE_OPT,
    Col,
    Group,
    console,
    echo,
    err_console,
    fail,
    fitted_table,
    print_table,
)
from tui.terminal_text import safe_text

SUBCOMMANDS = ("runs", "family", "tree", "compute")
ROWS_NOTE = ("A row counts independent attempts (one per task × actor × seed); forks (their own "
             "steps and tokens), interrupted, resumed and repeated runs have rows of their own "
             "(--pool-all pools them). Failures count as runs without success.")
#: the runs table's columns, most important first; HEADLINE ones are never dropped
PRIORITY = ["model", "success", "mean improvement", "normalized", "runs", "cost $", "failures",
            "steps", "tokens", "best-step improvement", "metric", "wall s", "infra failures"]
HEADLINE = {"model", "success", "mean improvement", "normalized"}
#: the family table's columns, most important first
FAMILY_PRIORITY = ["run", "final score", "actor", "at", "steps (own)", "status", "forked from",
                   "score after the fork point"]


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


#: the least a long ``key`` cell (a model label) folds to when the headline numbers need its room
KEY_FOLD_MIN = 24


def needs(names: list[str], rows: list[list[str]], headline: set[str], width: int,
          key: str) -> dict[str, int]:
    """The width each column needs: a headline number (``100% ± 0% (2/2)``) and the ``key``
    column (typed back) their longest cell, any other its longest word, so rich wraps at
    spaces, never inside a word; a ``key`` too long to leave the headline numbers their room
    folds (to no less than ``KEY_FOLD_MIN``) rather than push one of them out."""
    need = {n: max(_longest_word(n), *((len(r[i]) if n == key or n in headline else _longest_word(r[i]))
                                       for r in rows))
            for i, n in enumerate(names)}
    if key in need:
        room = width - 1 - sum(need[n] + 3 for n in headline if n in need and n != key) - 3
        need[key] = min(need[key], max(room, KEY_FOLD_MIN, _longest_word(key)))
    return need


def fit(names: list[str], rows: list[list[str]], priority: list[str], headline: set[str],
        width: int, key: str) -> list[str]:
    """The columns to show at ``width``: the headline ones, then others in ``priority`` order
    while each can have what it :func:`needs`; in the table's order."""
    need = needs(names, rows, headline, width, key)
    chosen = [n for n in priority if n in headline and n in names]
    used = sum(need[n] + 3 for n in chosen) + 1
    for n in priority:
        if n in names and n not in chosen and used + need[n] + 3 <= width:
            chosen.append(n)
            used += need[n] + 3
    return [n for n in names if n in chosen]


def show(title: str, names: list[str], rows: list[list[str]], *, priority: list[str],
         headline: set[str], key: str, wide: bool, right: set[str] = frozenset()) -> None:
    """Print a table through the CLI's ``fitted_table``: everything with ``--wide``, else the
    columns :func:`fit` keeps, the caption naming the ones ``--wide`` adds."""
    keep = names if wide else fit(names, rows, priority, headline, console.width, key)
    # headline numbers are read whole (never ``100% ±`` / ``0%`` / ``(2/2)``); the key column
    # too, unless its longest cell had to fold to leave them their room (``needs``)
    need = needs(names, rows, headline, console.width, key)
    whole_key = need.get(key, 0) >= max((len(r[names.index(key)]) for r in rows), default=0)
    cols = [Col(n, key=(n == key and whole_key) or (n in headline and n != key),
                justify="right" if n in right else "left") for n in keep]
    idx = [names.index(n) for n in keep]
    if wide:
        print_table(title, cols, [[r[i] for i in idx] for r in rows], wide=True)
        return
    table, _ = fitted_table(title, cols, [[r[i] for i in idx] for r in rows])
    left_out = [n for n in names if n not in keep]
    if left_out:
        table.caption = Text(f"--wide adds: {', '.join(left_out)}")
    console.print(table)


class ReportGroup(Group):
    """``report`` and its subcommands; an old spelling (no subcommand first) goes to the
    hidden ``legacy`` command, which runs it and names the new spelling."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if args and args[0] not in (*SUBCOMMANDS, "legacy", "--help", "-h"):
            args = ["legacy", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=ReportGroup, no_args_is_help=True,
                  help="Reports over run folders: runs (a task × actor table), family (a run and "
                  "its forks), tree (a tree run's nodes), compute (runs' best search score by "
                  "wall-clock and CPU seconds).")


def register(parent: typer.Typer) -> None:
    parent.add_typer(app, name="report")


POOL_OPT = typer.Option(False, "--pool-all", help="pool forks, interrupted, resumed and repeated "
                        "runs with the independent attempts of their row (default: rows of their own)")
WHERE_OPT = typer.Option(
    None, "--where", help="only runs whose run.json has KEY=VALUE (repeatable): backend=docker, "
    "gpu=none, cores=16, mode=tools, kind=baseline, validations=0, or any dotted key "
    "(config.context.keep_last=3, manifest.machine.cpu_model=...)")
COMPARE_OPT = typer.Option(
    None, "--compare",
    help="two models (labels in the table) or two run folders, side by side on shared tasks")
PLOTS_OPT = typer.Option(None, "--plots", help="write PNG plots into this folder")
MARKDOWN_OPT = typer.Option(False, "--markdown", help="a Markdown table on stdout")
DIFF_OPT = typer.Option(False, "--diff", help="each fork's final workspace diffed against the run "
                        "it was forked from (code first; data files summarised)")
FULL_OPT = typer.Option(False, "--full", help="with --diff: data files (csv, long diffs) in full too")


@app.command("runs")
def runs_cmd(
    runs_dir: Path = typer.Argument(..., help="a folder of runs (searched recursively), e.g. a batch"),
    markdown: bool = MARKDOWN_OPT,
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
    plots: Optional[Path] = PLOTS_OPT,
    compare: Optional[tuple[str, str]] = COMPARE_OPT,
    where: Optional[list[str]] = WHERE_OPT,
    pool_all: bool = POOL_OPT,
) -> None:
    """Success rate, improvement ± stderr, steps, tokens, cost, time and failures per task ×
    actor, over independent attempts (one per task × actor × seed)."""
    runs_report(runs_dir, markdown=markdown, as_json=as_json, wide=wide, plots=plots,
                compare=compare, where=where, pool_all=pool_all)


@app.command("family")
def family_cmd(
    run_dir: Path = typer.Argument(..., help="a run directory: it, the run it was forked from and "
                                   "every fork, compared"),
    markdown: bool = MARKDOWN_OPT,
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
    diff: bool = DIFF_OPT,
    full: bool = FULL_OPT,
) -> None:
    """A run's family: score per step after each fork point, final scores, workspace diffs."""
    if full and not diff:
        fail("--full shows the data files of --diff: give both")
    family_report(run_dir, as_json=as_json, markdown=markdown, diff=diff, wide=wide, full=full)


@app.command("tree")
def tree_cmd(
    run_dir: Path = typer.Argument(..., help="a tree run's directory (--agent tree)"),
    markdown: bool = MARKDOWN_OPT,
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
) -> None:
    """A tree run's nodes (parent, op, status, metric, seconds, plan), the best marked."""
    tree_report(run_dir, as_json=as_json, markdown=markdown, wide=wide)


@app.command("compute")
def compute_cmd(
    run_dirs: list[Path] = typer.Argument(..., metavar="RUN_DIR", help="run directories to "
                                          "compare (pools on any number of workers, ordinary runs)"),
    wall: Optional[str] = typer.Option(None, "--wall", metavar="S,S,..", help="wall-clock marks "
                                       "in seconds (default: quarters of the longest run)"),
    cpu: Optional[str] = typer.Option(None, "--cpu", metavar="S,S,..", help="CPU-second marks "
                                      "(default: quarters of the most CPU seconds a run spent)"),
    markdown: bool = MARKDOWN_OPT,
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
    plot: bool = typer.Option(False, "--plot", help="after the table, chart each run's best "
                              "search score against wall-clock and CPU seconds"),
    plots: Optional[Path] = typer.Option(None, "--plots", help="write the same charts as "
                                         "compute.png into this folder"),
) -> None:
    """Each run's best search score by each wall-clock and CPU-second mark, and its test score:
    a pool on 2 workers, one on 8 and an ordinary run side by side."""
    compute_runs_report(run_dirs, wall=marks(wall, "--wall"), cpu=marks(cpu, "--cpu"),
                        as_json=as_json, markdown=markdown, wide=wide, plot=plot, plots=plots)


def marks(text: str | None, flag: str) -> list[float] | None:
    """``60,120,300`` as seconds; a usage error names the flag."""
    if not text:
        return None
    try:
        found = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        fail(f"{flag} {text}: give seconds separated by commas, e.g. {flag} 60,120,300")
        raise  # unreachable: fail() exits
    if not found or any(not math.isfinite(m) or m <= 0 for m in found):  # float() takes "nan"
        fail(f"{flag} {text}: every mark is a number of seconds above 0")
    return found


@app.command("legacy", hidden=True)
def legacy_cmd(
    runs_dir: Optional[Path] = typer.Argument(None),
    markdown: bool = MARKDOWN_OPT,
    as_json: bool = JSON_OPT,
    wide: bool = WIDE_OPT,
    plots: Optional[Path] = PLOTS_OPT,
    compare: Optional[tuple[str, str]] = COMPARE_OPT,
    where: Optional[list[str]] = WHERE_OPT,
    pool_all: bool = POOL_OPT,
    family: Optional[Path] = typer.Option(None, "--family"),
    diff: bool = DIFF_OPT,
    tree: Optional[Path] = typer.Option(None, "--tree"),
) -> None:
    """The spellings from before the subcommands, each checked as it was."""
    def note(new: str) -> None:
        err_console.print(Text.assemble(("note:", "yellow"), " ", safe_text(f"this is now spelled `{new}`")),
                          highlight=False)

    if tree is not None:
        if runs_dir is not None or compare or where or plots or family is not None or diff or pool_all:
            fail("--tree RUN_DIR lists one tree run's nodes: give it alone (with --json, "
                 "--markdown or --wide)")
        note("labcoat report tree RUN_DIR")
        return tree_report(tree, as_json=as_json, markdown=markdown, wide=wide)
    if family is not None:
        if runs_dir is not None or compare or where or plots or pool_all:
            fail("--family RUN_DIR compares one run's forks: give it alone (with --json, "
                 "--markdown or --diff)")
        note("labcoat report family RUN_DIR")
        return family_report(family, as_json=as_json, markdown=markdown, diff=diff, wide=wide)
    if diff:
        fail("--diff goes with --family RUN_DIR (now: labcoat report family RUN_DIR --diff)")
    if runs_dir is None:
        fail("give a RUNS_DIR: labcoat report runs RUNS_DIR (or report family|tree RUN_DIR)")
    note("labcoat report runs RUNS_DIR")
    runs_report(runs_dir, markdown=markdown, as_json=as_json, wide=wide, plots=plots,
                compare=compare, where=where, pool_all=pool_all)


def runs_report(runs_dir: Path, *, markdown: bool, as_json: bool, wide: bool, plots: Path | None,
                compare: tuple[str, str] | None, where: list[str] | None, pool_all: bool) -> None:
    from environments.reports import (
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
    from environments.reports import compare as compare_rows

    if not runs_dir.exists():
        fail(f"{runs_dir}: no such folder")
    try:
        filters = parse_where(where or [])
    except ValueError as err:
        fail(str(err))
    a, b = compare if compare else (None, None)
    if a is not None and Path(a).is_dir() and Path(b).is_dir():  # two folders, each its own row
        runs = (load_runs(a, label=a, where=filters, pool_all=pool_all, on_skip=skipped)
                + load_runs(b, label=b, where=filters, pool_all=pool_all, on_skip=skipped))
    else:
        runs = load_runs(runs_dir, where=filters, pool_all=pool_all, on_skip=skipped)
    if not runs:
        fail(f"{runs_dir}: no run directories found" + (" matching --where" if filters else ""))
    rows = build_report(runs)
    if a is not None:
        labels = {r.model for r in rows}
        for name in (a, b):
            if name not in labels:
                fail(f"--compare: {name!r} is neither a row of the report ({', '.join(sorted(labels))}) "
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
        names = [c for c in COLUMNS if c != "task"]
        cells = {row.task: [] for row in rows}
        for row in rows:
            cells[row.task].append(row_cells(row)[1:])
        scaled = any(r.mean_normalized is not None for r in rows)  # else normalized is all n/a
        for task, task_rows in cells.items():
            show(f"{task}: {plural(sum(r.runs for r in rows if r.task == task), 'run')}", names, task_rows,
                 priority=PRIORITY if scaled else [n for n in PRIORITY if n != "normalized"],
                 headline=HEADLINE if scaled else HEADLINE - {"normalized"}, key="model", wide=wide,
                 right={n for n in names if n != "model"})
        for line in textwrap.wrap(ROWS_NOTE, min(console.width, 100)):
            console.print(Text(line))
    if plots is not None:
        for path in write_plots(rows, runs, plots):
            err_console.print(safe_text(f"wrote {path}"))
        for note in plot_notes(runs):
            err_console.print(Text.assemble(("note:", "yellow"), " ", safe_text(note)), highlight=False)


def skipped(folder: Path, why: str) -> None:
    """One line on stderr for a run folder a report cannot read (the others are reported)."""
    err_console.print(Text.assemble(("skipped", "yellow"), " ", safe_text(why)), highlight=False)


def family_report(run_dir: Path, *, as_json: bool, markdown: bool, diff: bool, wide: bool,
                  full: bool = False) -> None:
    """``labcoat report family RUN_DIR``: the original, its forks, and how they continued."""
    from environments.record.runs import RunDir, RunReadError
    from environments.reports import dump
    from environments.reports.family import (
        FAMILY_COLUMNS,
        diff_workspaces,
        family_markdown,
        load_family,
        member_cells,
    )

    if not (run_dir / "run.json").exists():
        fail(f"{run_dir}: not a run directory (no run.json)")
    try:
        fam = load_family(run_dir)
        by_id = {m.run_id: m for m in fam.members}
        diffs = [diff_workspaces(RunDir.open(by_id[m.parent].path, newer_ok=True),
                                 RunDir.open(m.path, newer_ok=True))
                 for m in fam.members if diff and m.parent in by_id]
    except RunReadError as err:  # the run named cannot be read: one line, not a traceback
        fail(str(err))
        raise  # unreachable: fail() exits
    for why in fam.skipped:
        skipped(Path(why.split(": ", 1)[0]).parent, why)
    if as_json:
        typer.echo(dump({"members": [m.model_dump() for m in fam.members],
                         "diffs": [d.model_dump() for d in diffs]}))
        return
    if markdown:
        echo(family_markdown(fam))
    else:
        show(f"{plural(len(fam.members), 'run')} of {fam.root.run_id}'s family", FAMILY_COLUMNS,
             [member_cells(m) for m in fam.members], priority=FAMILY_PRIORITY,
             headline={"run", "final score"}, key="run", wide=wide, right={"at", "steps (own)"})
        if len(fam.members) == 1:
            console.print("no forks yet: labcoat run --fork RUN_DIR --at K starts one", highlight=False)
    for d in diffs:  # the actors' files: their bytes are never the terminal's (echo)
        echo("\n" + "\n".join(d.report(full)))


def compute_runs_report(run_dirs: list[Path], *, wall: list[float] | None, cpu: list[float] | None,
                        as_json: bool, markdown: bool, wide: bool, plot: bool = False,
                        plots: Path | None = None) -> None:
    """``labcoat report compute RUN...``: the runs' search against wall clock and compute."""
    from environments.reports import dump, md_table
    from tui.cli.compute_report import (
        EXTRA,
        compute_charts,
        compute_footer,
        compute_header,
        compute_names,
        compute_report,
        compute_rows,
        write_compute_plot,
    )
    from tui.cli.tree_report import TreeReportError

    try:
        report = compute_report(run_dirs, wall, cpu)
    except TreeReportError as err:
        fail(str(err))
        raise  # unreachable: fail() exits
    if plots is not None:  # said on stderr: --json's stdout stays one document
        try:
            err_console.print(safe_text(f"wrote {write_compute_plot(report, plots)}"), highlight=False)
        except OSError as err:
            fail(f"--plots {plots}: {err.strerror or err}")
    if as_json:
        typer.echo(dump(report.model_dump()))
        return
    names, rows = compute_names(report), compute_rows(report)
    charts = f"\n\n{compute_charts(report)}" if plot else ""
    if markdown:
        charts = f"\n\n```\n{charts.strip()}\n```" if plot else ""
        echo(f"{compute_header(report)}\n\n{md_table(names, rows)}\n\n{compute_footer(report)}{charts}\n",
             nl=False)
        return
    cols = [Col(n, key=n == "run", extra=n in EXTRA,
                justify="left" if n in ("run", "agent", "cpu from") else "right") for n in names]
    print_table(compute_header(report), cols, rows, wide=wide)
    console.print(safe_text(compute_footer(report) + charts), highlight=False)


def tree_report(run_dir: Path, *, as_json: bool, markdown: bool, wide: bool) -> None:
    """``labcoat report tree RUN_DIR``: every node of a tree run, the best marked."""
    from environments.reports import dump
    from environments.reports.verify import verify_run
    from tui.cli.tree_report import (
        TreeReportError,
        footer,
        header,
        load_tree_report,
        rich_cells,
        tree_columns,
        tree_markdown,
    )
    from tui.cli.verify import print_ledger

    try:
        report = load_tree_report(run_dir)
    except TreeReportError as err:
        fail(str(err))
        raise  # unreachable: fail() exits
    verdict = verify_run(run_dir)  # which split chose the best node is the ledger's to show
    if as_json:
        typer.echo(dump({**report.model_dump(), "ledger": verdict.model_dump()}))
    elif markdown:
        echo(tree_markdown(report), nl=False)
    else:
        print_table(header(report), tree_columns(report),
                    rich_cells(report, None if wide else console.width), wide=wide)
        console.print(safe_text(footer(report)), highlight=False)
        print_ledger(verdict)
