"""``labcoat run``: let an actor attempt a task, live, then score it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from tui.common import JSON_OPT, SANDBOX_OPT, console, fail, print_score


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)


def run_cmd(
    task: Optional[str] = typer.Argument(None, help="suite task name or task folder"),
    agent: Optional[str] = typer.Option(None, "--agent", help="replay (more in agent/factory.py)"),
    actions: Optional[Path] = typer.Option(None, "--actions", help="JSONL actions for --agent replay"),
    sandbox: str = SANDBOX_OPT,
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir"),
    seed: int = typer.Option(0, "--seed"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="continue this run directory"),
    max_steps: Optional[int] = typer.Option(None, "--max-steps"),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="seconds"),
    score: bool = typer.Option(True, "--score/--no-score", help="score the run when it ends"),
    as_json: bool = JSON_OPT,
) -> None:
    """Let an actor attempt a task; every step is recorded under RUNS_DIR/<run_id>/."""
    from agent.factory import AgentConfigError, make_actor
    from agent.replay import ReplayError
    from agent.runner import Budgets, create_run, drive, task_of
    from environments.runs import RunDir
    from environments.scoring import score_run
    from environments.task import TaskError
    from tui.display import hooks_for

    try:
        actor = make_actor(agent, actions=actions)
        if resume is not None:
            run = RunDir.open(resume)
            task_spec = task_of(run)
        else:
            if task is None:
                fail("give a TASK (or --resume RUN_DIR)")
            budgets = Budgets(max_steps=max_steps, max_time=max_time)
            run, task_spec = create_run(task, actor, runs_dir, sandbox=sandbox, seed=seed,
                                        budgets=budgets)
    except (AgentConfigError, ReplayError, TaskError, FileNotFoundError, ValueError) as err:
        fail(str(err))
    if not as_json:
        console.print(f"run [bold]{run.meta.run_id}[/] on [bold]{run.meta.task}[/] "
                      f"(sandbox {run.meta.sandbox}) → {run.path}")
    meta = drive(run, task_spec, actor, hooks=hooks_for(console, quiet=as_json))
    result = {"run_dir": str(run.path), **meta.model_dump()}
    if score:
        s = score_run(run, task_spec, sandbox=meta.sandbox)
        result["score"] = s.model_dump()
        if not as_json:
            print_score(s)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    if meta.status == "error":
        raise typer.Exit(1)
