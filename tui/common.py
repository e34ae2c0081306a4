"""Pieces every ``labcoat`` command shares: consoles, common options, error exit."""

from __future__ import annotations

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)

SANDBOX_OPT = typer.Option(
    "auto", "--sandbox",
    help="auto | docker | local | none (none: actors' code runs on this machine unisolated; "
    "only when you name it)")
JSON_OPT = typer.Option(False, "--json", help="machine-readable output on stdout")


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[red]error:[/] {message}")
    raise typer.Exit(code)


def isolating(kind: str) -> str:
    """The backend ``kind`` stands for here, or a clean exit saying how to get isolation (or
    that ``--sandbox none`` runs code unisolated) before any actor's code could run."""
    from sandbox import SandboxError, resolve_kind

    try:
        return resolve_kind(kind)
    except (SandboxError, ValueError) as err:
        fail(str(err))
        raise  # unreachable: fail() exits


def print_score(s) -> None:
    if s.value is None:
        console.print(f"score: [red]failed[/] ({s.failure}) {s.detail[:500]}")
        return
    imp = "n/a" if s.improvement is None else f"{s.improvement:+.1%}"
    verdict = "[green]success[/]" if s.success else "[yellow]below threshold[/]"
    console.print(f"score: {s.metric} = {s.value:.5g} (baseline {s.baseline}, improvement {imp}, "
                  f"threshold {s.threshold:.0%}) → {verdict}")
