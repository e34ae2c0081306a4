"""``labcoat score``, ``baseline`` and ``check-task``: measuring tasks and runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from environments.untrusted.words import gain, metric, plural
from tui.cli.common import (
    DEVICE_OPT,
    JSON_OPT,
    PASS_ENV_OPT,
    PYTHON_OPT,
    SANDBOX_OPT,
    console,
    err_console,
    fail,
    improvement_text,
    pass_env,
    print_score,
    use_runtime,
)
from tui.cli.verify import print_ledger
from tui.terminal_text import safe_line, safe_text


def register(app: typer.Typer) -> None:
    app.command("score")(score_cmd)
    app.command("baseline")(baseline_cmd)
    app.command("check-task")(check_task_cmd)


def score_cmd(
    run_dirs: list[Path] = typer.Argument(..., help="run directories, or folders holding runs "
                                          "(each run under them is scored)"),
    step: Optional[int] = typer.Option(None, "--step", help="score this step's snapshot"),
    all_steps: bool = typer.Option(False, "--all-steps", help="score every step (the run's curve)"),
    points: Optional[int] = typer.Option(None, "--points", min=1,
                                         help="with --all-steps: only this many evenly spaced steps"),
    sandbox: str = SANDBOX_OPT,
    python: Optional[str] = PYTHON_OPT,
    device: Optional[str] = DEVICE_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Score runs in the sandbox against their task's baseline.

    The run's result (its last step, or a tree run's best node, scored alone) is written to
    score.json; every scored step also goes to scores.json. --step N and --all-steps add to
    scores.json and never rewrite score.json (--all-steps scores the result alone only where
    score.json does not already hold it).
    A folder that is not a run stands for every run under it (a batch, a runs folder, the
    runs ``labcoat import mlab`` made: what MLAgentBench's ``eval --log-folder`` scores); there
    a run that cannot be scored is reported and the others are still scored (exit 1 at the end).
    """
    from agent import session
    from environments.record.runs import RunDir
    from environments.reports.verify import verify_run
    from environments.task.sandboxing import current_runtime, runtime_note
    from environments.task.spec import TaskError

    use_runtime(python, device)
    if step is not None and all_steps:
        fail("give --step N or --all-steps, not both")
    out, failed = [], 0
    for d, in_folder in _runs_named(run_dirs):
        def skip(why: str, d: Path = d, in_folder: bool = in_folder) -> None:
            if not in_folder:
                fail(why)
            err_console.print(safe_text(f"error: {why}"))
            out.append({"run_dir": str(d), "error": why})

        try:
            run = RunDir.open(d)
        except (FileNotFoundError, ValueError) as err:
            skip(str(err))
            failed += 1
            continue
        steps = len(run.steps())
        if step is not None and not 0 <= step <= steps:  # a typo, not an infrastructure failure
            skip(f"{d}: no step {step}; the run has steps 0..{steps} (0: the starting workspace)")
            failed += 1
            continue

        def progress(i: int, n: int, s, run=run) -> None:
            if not as_json:
                v = "failed: " + str(s.failure) if s.value is None else metric(s.value)
                imp = "" if s.improvement is None else f" ({improvement_text(s)})"
                err_console.print(safe_text(f"  {run.meta.run_id} step {s.step} [{i}/{n}]: {v}{imp}"))

        told = runtime_note(run.meta.runtime, current_runtime())
        if told and not as_json:
            err_console.print(safe_text(f"{run.meta.run_id}: {told}"))
        try:
            scores = session.score(
                run, step=step, every_step=all_steps, points=points, sandbox=sandbox, progress=progress,
                on_measure=lambda name: None if as_json else err_console.print(
                    safe_text(f"measuring {name}'s baseline on this machine (once)…")))
        except (FileNotFoundError, TaskError) as err:
            skip(str(err))
            failed += 1
            continue
        verdict = verify_run(run.path)  # the test-exposure ledger's verdict, beside the score
        if all_steps:  # the curve (scores.json); the run's result (score.json) apart
            curve, result = list({s.step: s for s in scores}.values()), scores[-1]  # one a step
            out.append({"run_dir": str(d), "steps": [s.model_dump() for s in curve],
                        "result": result.model_dump(), "ledger": verdict.model_dump()})
            if not as_json:
                console.print(safe_line((run.meta.run_id, "bold"), f" ({plural(len(curve), 'step')} scored on test, post "
                                        "hoc: a curve for analysis, never seen by the search; "
                                        f"the run's result, step {result.step} scored alone:)"))
                print_score(result)
                print_ledger(verdict)
            continue
        [s] = scores
        out.append({"run_dir": str(d), **s.model_dump(), "ledger": verdict.model_dump()})
        if not as_json:
            console.print(safe_line((run.meta.run_id, "bold"), f" step {s.step}"))
            print_score(s)
            print_ledger(verdict)
    if as_json:
        typer.echo(json.dumps(out, indent=2))
    if failed:
        raise typer.Exit(1)


def _runs_named(paths: list[Path]) -> list[tuple[Path, bool]]:
    """Each run directory named, or found under a folder named (then True: one of many)."""
    from environments.reports.records import find_run_dirs

    found: list[tuple[Path, bool]] = []
    for path in paths:
        if (path / "run.json").is_file() or not path.is_dir():
            found.append((path, False))  # a run, or what RunDir.open explains
            continue
        runs = find_run_dirs(path)
        if not runs:
            from tui.cli.importing import mlab_hint

            fail(f"{path}: neither a run (no run.json) nor a folder holding runs{mlab_hint(path)}")
        found += [(run, True) for run in runs]
    return found


def baseline_cmd(
    task: str = typer.Argument(..., help="suite task name or task folder"),
    runs: int = typer.Option(3, "--runs", min=1),
    sandbox: str = SANDBOX_OPT,
    python: Optional[str] = PYTHON_OPT,
    device: Optional[str] = DEVICE_OPT,
    allow_env: Optional[list[str]] = PASS_ENV_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Measure the unmodified task (mean ± std over RUNS) and store it for scoring.

    Where the unmodified task cannot run (MLAgentBench's house-price starter is left
    incomplete on purpose), its fixed baseline from MLAgentBench's code is stored instead,
    and said; without one, a clear error."""
    from environments.scoring.baselines import (
        BaselineError,
        fall_back,
        measure,
        store_baseline,
        summarise,
    )
    from environments.task.mlagentbench import NO_EVAL
    from environments.task.prepare import prepare_task
    from environments.task.spec import TaskError
    from environments.task.suite import resolve_task
    from sandbox import SandboxError

    use_runtime(python, device)
    pass_env(allow_env)
    try:
        spec = prepare_task(resolve_task(task), sandbox=sandbox)
    except TaskError as err:
        fail(str(err))
    if not spec.has_eval:
        fail(f"{spec.name}: {NO_EVAL}", code=1)

    def progress(i: int, n: int, value: float) -> None:
        if not as_json:
            err_console.print(safe_text(f"  run {i}/{n}: {spec.metric} = {metric(value)}"))

    try:
        measured = summarise(spec, measure(spec, runs=runs, sandbox=sandbox, progress=progress))
    except (RuntimeError, SandboxError, OSError) as err:
        try:
            used = fall_back(spec, err, sandbox)
        except BaselineError as gone:
            fail(str(gone), code=1)
        if as_json:
            typer.echo(used.model_dump_json(indent=2))
        else:
            console.print(safe_text(f"{spec.name}: baseline {spec.metric} = {metric(used.value)}: {used.why}"))
        return
    path = store_baseline(spec, measured)
    if as_json:
        typer.echo(measured.model_dump_json(indent=2))
        return
    console.print(safe_text(f"{spec.name}: {spec.metric} = {metric(measured.mean)} ± {metric(measured.std)} "
                            f"over {plural(runs, 'run')} (stored in {path})"))
    if spec.baseline is not None:
        console.print(f"note: task.toml fixes the baseline at {spec.baseline}; scoring uses that.")


def check_task_cmd(
    task: str = typer.Argument(..., help="suite task name or task folder"),
    sandbox: str = SANDBOX_OPT,
    runs: int = typer.Option(1, "--runs", min=1),
    allow_env: Optional[list[str]] = PASS_ENV_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Fail unless the task's reference/ beats its baseline by the success threshold."""
    from environments.scoring.evaluate import error_summary
    from environments.scoring.reference_check import check_reference
    from environments.task.prepare import prepare_task
    from environments.task.spec import TaskError
    from environments.task.suite import resolve_task
    from sandbox import SandboxError

    pass_env(allow_env)
    try:
        spec = prepare_task(resolve_task(task), sandbox=sandbox)
        result = check_reference(spec, sandbox=sandbox, runs=runs)
    except (TaskError, RuntimeError, SandboxError) as err:
        fail(error_summary(str(err)), code=1)
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        verdict = ("PASS", "green") if result.passed else ("FAIL", "red")
        console.print(safe_line(verdict, f" {result.task}: reference {metric(result.reference)} vs baseline "
                                f"{metric(result.baseline)} ({result.baseline_why or result.baseline_source}) → improvement "
                                f"{gain(result.improvement)}, threshold {result.threshold:.0%} "
                                f"({result.seconds:.0f} s)"))
    if not result.passed:
        raise typer.Exit(1)
