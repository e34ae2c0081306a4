"""``labcoat sandbox ...``: which backends work here, and building the Docker image."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from sandbox import check_all

app = typer.Typer(help="Inspect and prepare the sandboxes that run actors' code.", no_args_is_help=True)
console = Console()


@app.command("check")
def check(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """Report which backends work on this machine and what each one isolates."""
    reports = check_all()
    if as_json:
        typer.echo(json.dumps([r.model_dump() for r in reports], indent=2))
        return
    table = Table(title="sandbox backends")
    cols = ["filesystem", "network", "memory", "cpu", "pids", "process_tree_kill",
            "unprivileged_user"]
    table.add_column("backend")
    table.add_column("available")
    table.add_column("how")
    for c in cols:
        table.add_column(c.replace("_", " "))
    for r in reports:
        table.add_row(r.backend, _mark(r.available), r.detail, *(_mark(getattr(r, c)) for c in cols))
    console.print(table)
    for r in reports:
        for w in r.warnings:
            console.print(f"[yellow]{r.backend}: {w}[/]")


def _mark(flag: bool) -> str:
    return "[green]yes[/]" if flag else "[red]no[/]"
