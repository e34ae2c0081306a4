"""``labcoat import mlab LOG_DIR``: MLAgentBench's runs as labcoat runs.

Thin over :mod:`environments.imports.mlab`: every ``env_log/trace.json`` beneath ``LOG_DIR``
becomes a run in ``--runs-dir`` (one that was imported before is named, not made again), and a
log that cannot be imported is said, with why, while the others go on. Nothing of a log runs:
its task is a suite task its trace names, or the folder ``--task`` names (never one inside the
log), prepared as ``labcoat prepare`` would. The summary counts the logs imported now, those
imported before and those that failed; the exit status is 1 when any log failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from environments.untrusted.words import plural
from tui.cli.common import (
    JSON_OPT,
    PASS_ENV_OPT,
    SANDBOX_OPT,
    Group,
    console,
    err_console,
    fail,
    pass_env,
    stdout_for_json_only,
)
from tui.terminal_text import safe_line, safe_text

app = typer.Typer(cls=Group, help="Bring runs of other tools in as labcoat runs.", no_args_is_help=True)


def register(main: typer.Typer) -> None:
    main.add_typer(app, name="import")


def mlab_hint(folder: Path) -> str:
    """For a folder given where runs were expected: how to import the MLAgentBench logs it
    holds ("" when it holds none)."""
    from environments.imports.mlab import MlabImportError, find_logs

    try:
        logs = find_logs(folder)
    except (MlabImportError, OSError):
        return ""
    if not logs:
        return ""
    return (f"; it holds {plural(len(logs), 'MLAgentBench log')}: import them first with "
            f"labcoat import mlab {folder} --task PATH_OR_NAME, then score the runs it writes")


@app.command("mlab")
def mlab_cmd(
    log_dir: Path = typer.Argument(..., help="an MLAgentBench log folder (its --log-dir), or a "
                                   "folder of many: each env_log/trace.json beneath it is imported"),
    task: Optional[str] = typer.Option(None, "--task", metavar="PATH_OR_NAME",
                                       help="the task the logs ran (a suite name, or a task folder "
                                       "from outside the logs, e.g. MLAgentBench/benchmarks/house-"
                                       "price); default: the --task each log's runner was given "
                                       "(LOG_DIR/log) when it is a suite task with the log's "
                                       "research problem (a log never names a folder)"),
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir", help="where the runs are written"),
    sandbox: str = SANDBOX_OPT,
    allow_env: Optional[list[str]] = PASS_ENV_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Import MLAgentBench runs: their steps, actions and workspace copies become labcoat runs
    that can be browsed, scored, reported and forked."""
    from environments.imports.mlab import MlabImportError, find_logs, import_logs
    from environments.task.prepare import prepare_task
    from sandbox import SandboxError, resolve_kind

    pass_env(allow_env)
    try:
        backend = resolve_kind(sandbox)
        if not find_logs(log_dir):
            fail(f"{log_dir}: no MLAgentBench log beneath it (no env_log/trace.json)")
    except (MlabImportError, SandboxError, ValueError) as err:
        fail(str(err))
    outcomes = []
    with stdout_for_json_only(as_json):
        for o in import_logs(log_dir, runs_dir, task_ref=task, sandbox=backend,
                             prepare=lambda t: prepare_task(t, sandbox=backend)):
            outcomes.append(o)
            if as_json:
                continue
            if o.status == "failed":
                err_console.print(safe_line(("failed", "red"), f" {o.log}: {o.error}"))
            elif o.status == "already":
                console.print(safe_text(f"already imported {o.log} as {o.run_dir}"))
            else:
                console.print(safe_line(("imported", "green"), f" {o.log} -> {o.run_dir} "
                                        f"({o.task}, {plural(o.steps, 'step')})"))
    if as_json:
        typer.echo(json.dumps([o.model_dump() for o in outcomes], indent=2))
    elif outcomes:
        count = {k: sum(o.status == k for o in outcomes) for k in ("imported", "already", "failed")}
        said = ", ".join([f"{count['imported']} imported"] + [
            f"{count[k]} {what}" for k, what in (("already", "imported before"), ("failed", "failed"))
            if count[k]])
        console.print(safe_text(f"{plural(len(outcomes), 'log')}: {said}; score them with "
                                f"labcoat score {runs_dir} (or labcoat report runs {runs_dir})"))
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(1)
