"""``labcoat export atif RUN``: labcoat runs in other tools' formats.

Thin over :mod:`interop.atif`: one run folder becomes one ATIF trajectory (on stdout, or in
``-o FILE``); a folder of runs becomes one trajectory a run, as JSON Lines on stdout or as
``DIR/<run id>.json`` files with ``-o DIR``. A run that cannot be read is said, with why, while
the others go on; the exit status is 1 when any failed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from tui.cli.common import Group, err_console, fail
from tui.terminal_text import safe_text

app = typer.Typer(cls=Group, help="Write labcoat runs in other tools' formats.", no_args_is_help=True)


def register(main: typer.Typer) -> None:
    main.add_typer(app, name="export")


@app.command("atif")
def atif_cmd(
    run_path: Path = typer.Argument(..., metavar="RUN", help="a run folder, or a folder of runs"),
    out: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE_OR_DIR",
                                       help="one run: the file to write (default: stdout); a folder "
                                       "of runs: the folder to write <run id>.json files in "
                                       "(default: JSON Lines on stdout)"),
) -> None:
    """Export runs as ATIF trajectories (Harbor's Agent Trajectory Interchange Format v1.7):
    steps, tool calls and observations, tokens and cost a step, the score as final metrics;
    forks, snapshots and tree nodes in the format's extra fields (docs/interop.md)."""
    from environments.record.runs import RunReadError
    from interop.atif import dumps, export_run, find_runs

    try:
        runs = find_runs(run_path)
    except FileNotFoundError as err:
        fail(str(err))
    if not runs:
        fail(f"{run_path}: no run folders (no run.json here or in its folders)")
    single = (run_path / "run.json").exists()
    if not single and out is not None:
        if out.exists() and not out.is_dir():
            fail(f"{out}: a folder of runs is written into a folder, and this is a file")
        out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in runs:
        try:
            trajectory = export_run(path)
        except (RunReadError, OSError, ValueError) as err:
            failed += 1
            err_console.print(safe_text(f"{path}: not exported ({str(err).splitlines()[0]})"),
                              highlight=False)
            continue
        if single:
            text = dumps(trajectory)
            if out is None:
                sys.stdout.write(text + "\n")
            else:
                out.write_text(text + "\n")
                err_console.print(safe_text(f"wrote {out}"), highlight=False)
        elif out is None:
            sys.stdout.write(dumps(trajectory, indent=None) + "\n")
        else:
            target = out / f"{path.name}.json"
            target.write_text(dumps(trajectory) + "\n")
            err_console.print(safe_text(f"wrote {target}"), highlight=False)
    if failed:
        raise typer.Exit(1)
