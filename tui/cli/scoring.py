"""``labcoat score``, ``baseline`` and ``check-task``: measuring tasks and runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from tui.cli.common import (
    JSON_OPT,
    SANDBOX_OPT,
    console,
    err_console,
    fail,
    improvement_text,
    print_score,
)
from tui.terminal_text import safe_line, safe_text


def register(app: typer.Typer) -> None:
    app.command("score")(score_cmd)
    app.command("baseline")(baseline_cmd)
    app.command("check-task")(check_task_cmd)


def score_cmd(
    run_dirs: list[Path] = typer.Argument(..., help="run directories"),
    step: Optional[int] = typer.Option(None, "--step", help="score this step's snapshot"),
    all_steps: bool = typer.Option(False, "--all-steps", help="score every step (the run's curve)"),
    points: Optional[int] = typer.Option(None, "--points", min=1,
                                         help="with --all-steps: only this many evenly spaced steps"),
    sandbox: str = SANDBOX_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Score runs in the sandbox against their task's baseline.

    The last step's score is written to score.json; every scored step also goes to scores.json.
    """
    from agent import session
    from environments.runs import RunDir
    from environments.task import TaskError

    if step is not None and all_steps:
        fail("give --step N or --all-steps, not both")
    out = []
    for d in run_dirs:
        try:
            run = RunDir.open(d)
        except (FileNotFoundError, ValueError) as err:
            fail(str(err))
        steps = len(run.steps())
        if step is not None and not 0 <= step <= steps:  # a typo, not an infrastructure failure
            fail(f"{d}: no step {step}; the run has steps 0..{steps} (0: the starting workspace)")

        def progress(i: int, n: int, s, run=run) -> None:
            if not as_json:
                v = "failed: " + str(s.failure) if s.value is None else f"{s.value:.5g}"
                imp = "" if s.improvement is None else f" ({improvement_text(s)})"
                err_console.print(safe_text(f"  {run.meta.run_id} step {s.step} [{i}/{n}]: {v}{imp}"))

        try:
            scores = session.score(
                run, step=step, every_step=all_steps, points=points, sandbox=sandbox, progress=progress,
                on_measure=lambda name: None if as_json else err_console.print(
                    safe_text(f"measuring {name}'s baseline on this machine (once)…")))
        except (FileNotFoundError, TaskError) as err:
            fail(str(err))
        if all_steps:
            out.append({"run_dir": str(d), "steps": [s.model_dump() for s in scores]})
            if not as_json:
                console.print(safe_line((run.meta.run_id, "bold"), f" ({len(scores)} steps scored; last:)"))
                print_score(scores[-1])
            continue
        [s] = scores
        out.append({"run_dir": str(d), **s.model_dump()})
        if not as_json:
            console.print(safe_line((run.meta.run_id, "bold"), f" step {s.step}"))
            print_score(s)
    if as_json:
        typer.echo(json.dumps(out, indent=2))


def baseline_cmd(
    task: str = typer.Argument(..., help="suite task name or task folder"),
    runs: int = typer.Option(3, "--runs", min=1),
    sandbox: str = SANDBOX_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Measure the unmodified task (mean ± std over RUNS) and store it for scoring."""
    from environments.prepare import prepare_task
    from environments.baselines import measure, store_baseline, summarise
    from environments.suite import resolve_task
    from environments.task import TaskError

    try:
        spec = prepare_task(resolve_task(task), sandbox=sandbox)
    except TaskError as err:
        fail(str(err))

    def progress(i: int, n: int, value: float) -> None:
        if not as_json:
            err_console.print(safe_text(f"  run {i}/{n}: {spec.metric} = {value:.5g}"))

    measured = summarise(spec, measure(spec, runs=runs, sandbox=sandbox, progress=progress))
    path = store_baseline(spec, measured)
    if as_json:
        typer.echo(measured.model_dump_json(indent=2))
        return
    console.print(safe_text(f"{spec.name}: {spec.metric} = {measured.mean:.5g} ± {measured.std:.2g} "
                            f"over {runs} runs (stored in {path})"))
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
    from environments.reference_check import check_reference
    from environments.suite import resolve_task
    from environments.task import TaskError

    try:
        spec = prepare_task(resolve_task(task), sandbox=sandbox)
        result = check_reference(spec, sandbox=sandbox, runs=runs)
    except (TaskError, RuntimeError) as err:
        fail(str(err), code=1)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        verdict = ("PASS", "green") if result.passed else ("FAIL", "red")
        console.print(safe_line(verdict, f" {result.task}: reference {result.reference:.5g} vs baseline "
                                f"{result.baseline:.5g} ({result.baseline_source}) → improvement "
                                f"{result.improvement:+.1%}, threshold {result.threshold:.0%} "
                                f"({result.seconds:.0f} s)"))
    if not result.passed:
        raise typer.Exit(1)
