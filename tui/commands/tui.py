"""``labcoat tui``: open the Textual workbench."""

from __future__ import annotations

from pathlib import Path

import typer

from tui.common import SANDBOX_OPT, isolating


def register(app: typer.Typer) -> None:
    app.command("tui")(tui_cmd)


def tui_cmd(
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir"),
    sandbox: str = SANDBOX_OPT,
) -> None:
    """Open the workbench: pick a task, act by hand or watch an agent, browse runs and scores."""
    from tui.app import LabcoatApp

    LabcoatApp(runs_dir=runs_dir, sandbox=isolating(sandbox)).run()
