"""``labcoat tui``: open the Textual workbench, optionally straight into a run.

The workbench is loaded by name, only when this command runs: the rest of the CLI never
imports Textual (``tui/cli/__init__.py``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Optional

import typer

from tui.cli.common import PASS_ENV_OPT, SANDBOX_OPT, fail, isolating, pass_env


def register(app: typer.Typer) -> None:
    app.command("tui")(tui_cmd)


def tui_cmd(
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir"),
    sandbox: str = SANDBOX_OPT,
    task: Optional[str] = typer.Option(None, "--task", help="open a new run of this task (by hand "
                                       "unless --model is given)"),
    model: Optional[str] = typer.Option(None, "--model", help="with --task: an agent run with this "
                                        "provider/model (as labcoat run --model)"),
    confirm: bool = typer.Option(False, "--confirm", help="with --model: approve each action"),
    run: Optional[Path] = typer.Option(None, "--run", help="open this past run directory"),
    allow_env: Optional[list[str]] = PASS_ENV_OPT,
) -> None:
    """Open the workbench: pick a task, act by hand or watch an agent, browse runs and scores."""
    if run is not None and task is not None:
        fail("--run opens a past run; --task starts a new one: pass one of them")
    if run is not None and not (run / "run.json").is_file():
        fail(f"{run} is not a run directory (it has no run.json)")
    if run is not None:  # a broken run.json: one line here, not a traceback from the app
        from environments.record.runs import RunReadError, read_meta

        try:
            read_meta(run, newer_ok=True)
        except RunReadError as err:
            fail(str(err))
    if model is not None and task is None:
        fail("--model starts an agent run: pass --task TASK with it")
    if confirm and model is None:
        fail("--confirm approves an agent's actions: pass --task TASK --model PROVIDER/MODEL")
    pass_env(allow_env)
    workbench = importlib.import_module("tui.app")
    link = workbench.DeepLink(task=task, model=model, confirm=confirm, run=run) \
        if (task or run) else None
    workbench.LabcoatApp(runs_dir=runs_dir, sandbox=isolating(sandbox), link=link).run()
