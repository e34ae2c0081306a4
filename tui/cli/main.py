"""The ``labcoat`` command line. Thin: each command calls the same APIs the TUI uses."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.text import Text

from tui.cli import batch as batch_cmd
from tui.cli import export as export_cmd
from tui.cli import importing as import_cmd
from tui.cli import launch as tui_cmd
from tui.cli import prepare as prepare_cmd
from tui.cli import report as report_cmd
from tui.cli import run as run_cmd
from tui.cli import sandbox as sandbox_cmd
from tui.cli import scoring as scoring_cmd
from tui.cli import uplift as uplift_cmd
from tui.cli import verify as verify_cmd
from tui.cli.common import (
    JSON_OPT,
    WIDE_OPT,
    Col,
    Group,
    clip,
    console,
    err_console,
    fitted_table,
    num,
    print_table,
)
from tui.terminal_text import safe_text

app = typer.Typer(
    cls=Group, help="labcoat: an agentic ML research workbench.", no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"labcoat {version('labcoat')}")
        except PackageNotFoundError:
            typer.echo("labcoat (not installed as a package)")
        raise typer.Exit()


@app.callback()
def _main(show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                            help="print labcoat's version and exit")) -> None:
    """labcoat: an agentic ML research workbench."""
    _recover_mounts()


def _recover_mounts() -> None:
    """A run killed with SIGKILL leaves its workspace's quota image mounted in its run folder:
    every command first recovers such mounts (copied back, unmounted), and says so. Only
    root makes quota images, and only a loop device can hold one: anything else reads the
    mount table and goes on (sandbox.quota is not even imported)."""
    try:
        if os.geteuid() != 0 or " /dev/loop" not in Path("/proc/self/mountinfo").read_text():
            return
    except OSError:
        return
    from sandbox.quota import recover_at_start

    for point in recover_at_start():
        err_console.print(safe_text(f"recovered {point}: a killed run had left its workspace's "
                                    "quota image mounted there (content copied back, unmounted)"),
                          highlight=False)


app.add_typer(sandbox_cmd.app, name="sandbox")
run_cmd.register(app)
scoring_cmd.register(app)
prepare_cmd.register(app)
batch_cmd.register(app)
report_cmd.register(app)
uplift_cmd.register(app)
tui_cmd.register(app)
import_cmd.register(app)
export_cmd.register(app)
verify_cmd.register(app)


@app.command("tasks")
def tasks_cmd(as_json: bool = JSON_OPT, wide: bool = WIDE_OPT) -> None:
    """List the task suite."""
    from environments.scoring.baselines import known_baseline
    from environments.task.suite import list_tasks

    tasks = list_tasks()
    rows = [{
        "name": t.name, "kind": t.kind, "metric": t.metric, "direction": t.direction,
        "baseline": known_baseline(t), "threshold": t.success_threshold, "tools": t.tools,
        "summary": t.summary, "path": str(t.root),
        # the private splits (environments/task/splits.py): what each is made of
        "splits": {n: {"about": t.splits[n].about if n in t.splits else "what eval.py scores",
                       "data": t.splits[n].data if n in t.splits else []}
                   for n in t.split_names},
        "validation_budget": t.validation_budget,
    } for t in tasks]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    cols = [Col("name", key=True), Col("kind"), Col("metric"), Col("baseline", justify="right"),
            Col("splits", extra=True), Col("tools", extra=True), Col("summary", extra=True)]
    cells = []
    for r in rows:
        arrow = "↑" if r["direction"] == "higher" else "↓"
        base = "measure" if r["baseline"] is None else num(r["baseline"])
        cells.append([r["name"], r["kind"], f"{r['metric']} {arrow}", base, " ".join(r["splits"]),
                      ", ".join(r["tools"]) or "—", r["summary"]])
    print_table(f"{len(rows)} tasks", cols, cells, wide=wide)


@app.command("tools")
def tools_cmd(as_json: bool = JSON_OPT, wide: bool = WIDE_OPT) -> None:
    """List the method tools actors can call."""
    from methods.registry import all_tools

    tools = all_tools()
    if as_json:
        typer.echo(json.dumps([{"name": t.name, "description": t.description, "module": t.module,
                                "entry": t.entry, "schema": t.args_model.model_json_schema()}
                               for t in tools.values()], indent=2))
        return
    title = f"{len(tools)} method tools"
    if wide:
        print_table(title, [Col("name", key=True), Col("command"), Col("description")],
                    [[t.name, " ".join(t.argv()), t.description] for t in tools.values()], wide=True)
        return
    # one line a tool: its name and its description's opening, cut between words
    room = console.width - max([4, *(len(n) for n in tools)]) - 7
    table, _ = fitted_table(title, [Col("name", key=True), Col("description")],
                            [[t.name, clip(t.description, room)] for t in tools.values()])
    table.caption = Text("--wide adds: command, whole descriptions")
    console.print(table)


def main() -> None:
    app()


