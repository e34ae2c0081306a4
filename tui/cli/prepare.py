"""``labcoat prepare``: run a task's ``scripts/prepare.py`` now, where a person can answer it.

Runs prepare a task on their own, but a ``prepare.py`` that asks (Kaggle's "accept the rules"
prompt) can only be answered at a terminal, and a download that failed is better retried on
purpose than at the start of a run. This command prepares (in the sandbox a run would use),
says where the prepared copy is and what it holds, and with ``--again`` throws the cached copy
away and prepares anew.
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from tui.cli.common import (
    JSON_OPT,
    PASS_ENV_OPT,
    SANDBOX_OPT,
    console,
    fail,
    isolating,
    known_task,
    pass_env,
    stdout_for_json_only,
)
from tui.cli.display import human_bytes
from tui.terminal_text import safe_text


def register(app: typer.Typer) -> None:
    app.command("prepare")(prepare_cmd)


def prepare_cmd(
    task: str = typer.Argument(..., help="suite task name or task folder"),
    again: bool = typer.Option(False, "--again", help="discard the prepared copy and run "
                               "prepare.py anew (runs using that copy lose it)"),
    sandbox: str = SANDBOX_OPT,
    allow_env: Optional[list[str]] = PASS_ENV_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Prepare a task now (its scripts/prepare.py, in the sandbox) and say where the copy is.

    Run it in a terminal to answer what prepare.py asks; its output is shown on stderr as it comes. Runs of the task use the prepared copy from then on."""
    from environments.task.prepare import (
        files_of,
        is_prepared,
        prepare_task,
        prepared_by_mlagentbench,
    )
    from environments.task.spec import TaskError
    from environments.task.suite import resolve_task

    known_task(task)
    pass_env(allow_env)
    kind = isolating(sandbox)
    try:
        source = resolve_task(task)
        if not source.prepare_path.exists():
            status = "no prepare.py"
        elif prepared_by_mlagentbench(source):
            status = "prepared by MLAgentBench"
        else:
            status = "cached" if is_prepared(source) and not again else "prepared"
        with stdout_for_json_only(as_json):
            spec = prepare_task(source, sandbox=kind, again=again)
    except (TaskError, OSError) as err:  # OSError: the cache's disk (full, unwritable)
        fail(str(err), code=1)
    held_files = files_of(spec.root)
    files, size = len(held_files), sum(n for n, _ in held_files.values())
    if as_json:
        typer.echo(json.dumps({"task": spec.name, "source": str(source.root), "status": status,
                               "path": str(spec.root), "files": files, "bytes": size}, indent=2))
        return
    held = f"{files} files, {human_bytes(size)}"
    said = {
        "no prepare.py": f"{spec.name} has no scripts/prepare.py: its folder is used as it is "
                         f"({held}): {spec.root}",
        "prepared by MLAgentBench": f"{spec.name} is used as MLAgentBench prepared it "
                                    f"({held}): {spec.root}",
        "cached": f"{spec.name} is already prepared ({held}; --again prepares anew): {spec.root}",
        "prepared": f"{spec.name} prepared ({held}): {spec.root}",
    }[status]
    console.print(safe_text(said))

