"""``labcoat score``, ``baseline`` and ``check-task``: measuring tasks and runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from tui.common import JSON_OPT, SANDBOX_OPT, console, err_console, fail, print_score


def register(app: typer.Typer) -> None:
    app.command("score")(score_cmd)
    app.command("baseline")(baseline_cmd)
    app.command("check-task")(check_task_cmd)


def score_cmd(
    run_dirs: list[Path] = typer.Argument(..., help="run directories"),
    step: Optional[int] = typer.Option(None, "--step", help="score this step's snapshot"),
    sandbox: str = SANDBOX_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Score runs in the sandbox against their task's baseline (writes score.json)."""
    from agent.runner import task_of
    from environments.runs import RunDir
    from environments.scoring import score_run

    scores = []
    for d in run_dirs:
        try:
            run = RunDir.open(d)
        except (FileNotFoundError, ValueError) as err:
            fail(str(err))
        s = score_run(run, task_of(run), step=step, sandbox=sandbox)
        scores.append({"run_dir": str(d), **s.model_dump()})
        if not as_json:
            console.print(f"[bold]{run.meta.run_id}[/]")
            print_score(s)
    if as_json:
        typer.echo(json.dumps(scores, indent=2))


def baseline_cmd(
    task: str = typer.Argument(..., help="suite task name or task folder"),
    runs: int = typer.Option(3, "--runs", min=1),
    sandbox: str = SANDBOX_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Measure the unmodified task (mean ± std over RUNS) and store it for scoring."""
    from environments.prepare import prepare_task
    from environments.scoring import measure, store_baseline, summarise
    from environments.suite import resolve_task
    from environments.task import TaskError

    try:
        spec = prepare_task(resolve_task(task))
    except TaskError as err:
        fail(str(err))

    def progress(i: int, n: int, value: float) -> None:
        if not as_json:
            err_console.print(f"  run {i}/{n}: {spec.metric} = {value:.5g}")

    measured = summarise(spec, measure(spec, runs=runs, sandbox=sandbox, progress=progress))
    path = store_baseline(spec, measured)
    if as_json:
        typer.echo(measured.model_dump_json(indent=2))
        return
    console.print(f"{spec.name}: {spec.metric} = {measured.mean:.5g} ± {measured.std:.2g} "
                  f"over {runs} runs (stored in {path})")
    if spec.baseline is not None:
        console.print(f"note: task.toml fixes the baseline at {spec.baseline}; scoring uses that.")


def check_task_cmd(
    task: str = typer.Argument(..., help="suite task name or task folder"),
    sandbox: str = SANDBOX_OPT,
    runs: int = typer.Option(1, "--runs", min=1),
    as_json: bool = JSON_OPT,
) -> None:
    """Fail unless the task's reference/ beats its baseline by the success threshold."""
    from environments.prepare import prepare_task
    from environments.scoring import check_task
    from environments.suite import resolve_task
    from environments.task import TaskError

    try:
        spec = prepare_task(resolve_task(task))
        result = check_task(spec, sandbox=sandbox, runs=runs)
    except (TaskError, RuntimeError) as err:
        fail(str(err), code=1)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        verdict = "[green]PASS[/]" if result.passed else "[red]FAIL[/]"
        console.print(f"{verdict} {result.task}: reference {result.reference:.5g} vs baseline "
                      f"{result.baseline:.5g} ({result.baseline_source}) → improvement "
                      f"{result.improvement:+.1%}, threshold {result.threshold:.0%} "
                      f"({result.seconds:.0f} s)")
    if not result.passed:
        raise typer.Exit(1)
