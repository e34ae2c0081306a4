"""``labcoat batch``: every task × model × seed as its own run, resumable, locally or on Ray."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer

from agent.batch import BatchSpec
from agent.config import ActorConfig, build, options
from tui.cli.common import (
    JSON_OPT,
    PASS_ENV_OPT,
    SANDBOX_OPT,
    console,
    err_console,
    fail,
    isolating,
    known_task,
    pass_env,
    stdout_for_json_only,
)
from tui.cli.run import check_actions, config_options
from tui.terminal_text import safe_line, safe_text


def register(app: typer.Typer) -> None:
    app.command("batch")(batch_cmd)


def _split(text: Optional[str]) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def default_models(actor: ActorConfig) -> str:
    """What ``labcoat run`` would pick with no --model: a provider's model when its key is
    set, else baseline/hparam."""
    from agent.factory import BASELINE, resolve_choice

    return resolve_choice(actor.kind, None, actor.actions)[1] or BASELINE


def check_models(spec: BatchSpec) -> None:
    """Build each model's actor once, before any run starts: a typo in a task name or a
    model string, a missing API key or a replayed action a task does not offer is a usage
    error now, not N failed runs later."""
    from agent.factory import AgentConfigError, make_actor
    from agent.replay import ReplayError

    for task in spec.tasks:
        known_task(task)
    for model in spec.models:
        config = spec.config_for(model, spec.seeds[0])
        try:
            make_actor(config)
        except (AgentConfigError, ReplayError, ValueError, FileNotFoundError) as err:
            fail(f"--models {model}: {err}")
        for task in spec.tasks:
            check_actions(config, task)


#: set per combination (``--models``, ``--seeds``), so not options of the whole batch
PER_COMBINATION = ("model", "seed")


@config_options(options(exclude=PER_COMBINATION))
def batch_cmd(
    tasks: Optional[str] = typer.Option(None, "--tasks", help="comma-separated suite tasks or folders"),
    models: Optional[str] = typer.Option(
        None, "--models", help="comma-separated model strings (provider/model, replay/FILE.jsonl, ...); "
        "default: as labcoat run (a provider's model when its key is set, else baseline/hparam)"),
    seeds: int = typer.Option(1, "--seeds", min=1, help="seeds 0..N-1 for every combination"),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="runs at the same time"),
    executor: str = typer.Option("local", "--executor", help="local | ray"),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="a Ray cluster (default: "
                                              "start a local instance)"),
    batch_dir: Optional[Path] = typer.Option(  # --batch-dir: the older spelling, kept
        None, "--dir", "--batch-dir", metavar="DIR", help="the batch folder (default: runs/batch-<time>)"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="continue the batch in this folder"),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="run failed combinations again: afresh, but a run whose "
        "sandbox died under it continues from its last step (in a batch of --sandbox auto, on "
        "another backend if its own is gone)"),
    sandbox: str = SANDBOX_OPT,
    allow_env: Optional[list[str]] = PASS_ENV_OPT,
    score: bool = typer.Option(True, "--score/--no-score", help="score each run when it ends"),
    curve_points: Optional[int] = typer.Option(
        None, "--curve-points", min=0, help="also score N evenly spaced steps per run (0: all)"),
    as_json: bool = JSON_OPT,
    options: dict[str, Any] | None = None,
) -> None:
    """Run a batch of runs; rerun the printed command to resume it after any interruption."""
    from agent.batch import (
        Progress,
        load_manifest,
        resume_command,
        run_batch,
    )

    if executor not in ("local", "ray"):
        fail(f"unknown executor {executor!r} (local or ray)")
    isolating(sandbox)
    pass_env(allow_env)
    spec = None
    given = {k: v for k, v in (options or {}).items() if v is not None}
    if resume is not None:
        if tasks or models or given:
            fail("--resume takes the spec from the batch folder; leave out --tasks/--models and "
                 f"the run options ({', '.join('--' + k.replace('_', '-') for k in given) or 'none given'})")
        if load_manifest(resume) is None:
            fail(f"{resume}: no batch.json; not a batch folder")
        folder = resume
    else:
        if not tasks:
            fail("give --tasks (or --resume BATCH_DIR)")
        try:
            actor, budgets = build(given)
        except ValueError as err:
            fail(str(err))
        if actor.actions is not None:
            actor = actor.model_copy(update={"actions": str(Path(actor.actions).resolve())})
        spec = BatchSpec(tasks=_split(tasks), models=_split(models) or [default_models(actor)],
                         seeds=list(range(seeds)), actor=actor, budgets=budgets, sandbox=sandbox,
                         score=score, score_points=curve_points)
        check_models(spec)
        folder = batch_dir or Path("runs") / time.strftime("batch-%Y%m%d-%H%M%S")
    again = resume_command(folder, jobs=jobs, executor=executor, ray_address=ray_address)
    if not as_json:
        err_console.print(safe_line(f"batch folder: {folder}\nto resume: ", (again, "bold")))

    live = None
    if not as_json and sys.stderr.isatty():
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as Bar

        live = Bar(TextColumn("batch"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.description}"), TimeElapsedColumn(), console=err_console)
        bar_task = live.add_task("", total=None)
        live.start()
    last_line = [""]

    def on_progress(p: Progress) -> None:
        text = f"done {p.done} · running {p.running} · failed {p.failed} · pending {p.pending} · ${p.cost:.4f}"
        if live is not None:
            live.update(bar_task, total=p.total, completed=p.done + p.failed, description=text)
        elif not as_json and text != last_line[0]:
            err_console.print(safe_text(f"[{p.done + p.failed}/{p.total}] {text}"))
            last_line[0] = text

    try:
        with stdout_for_json_only(as_json):
            result = run_batch(folder, spec, jobs=jobs, executor=executor, ray_address=ray_address,
                               retry_failed=retry_failed, on_progress=on_progress,
                               on_measure=lambda t: as_json or err_console.print(safe_text(
                                   f"{t}: no baseline known; measuring it first (labcoat baseline)")))
    except KeyboardInterrupt:
        if live is not None:
            live.stop()
        err_console.print(safe_line("interrupted; resume with: ", (again, "bold")))
        raise typer.Exit(130) from None
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        if live is not None:
            live.stop()
        fail(str(err))
    if live is not None:
        live.stop()
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        for r in result.results:
            if r.note:  # a run resumed on another backend than it ran on
                err_console.print(safe_line(("note", "yellow"), f" {r.key}: {r.note}"))
            if not r.ok:
                why = r.error or r.failure or (r.status == "error" and r.reason) or r.status
                first = (str(why).strip().splitlines() or [""])[0][:200]
                err_console.print(safe_line(("failed", "red"), f" {r.key}: {first}"))
        console.print(f"{result.done}/{result.total} done, {result.failed} failed "
                      f"({result.skipped_failed} earlier failures not retried), {result.ran} run now "
                      f"in {result.seconds:.0f} s, cost ${result.cost:.4f}")
        if result.failed or result.done < result.total:
            again = resume_command(folder, retry_failed=result.failed > 0, jobs=jobs, executor=executor,
                                   ray_address=ray_address)
            console.print(safe_text(f"resume: {again}"))
        console.print(safe_text(f"report: labcoat report runs {folder}"))
    if result.failed:
        raise typer.Exit(1)
