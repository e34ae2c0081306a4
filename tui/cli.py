"""The ``labcoat`` command line. Thin: each command calls the same APIs the TUI uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from tui.commands import sandbox as sandbox_cmd

app = typer.Typer(
    help="labcoat: an agentic ML research workbench.", no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(sandbox_cmd.app, name="sandbox")
console = Console()
err_console = Console(stderr=True)

SANDBOX_OPT = typer.Option("auto", "--sandbox", help="auto | docker | local")
JSON_OPT = typer.Option(False, "--json", help="machine-readable output on stdout")


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[red]error:[/] {message}")
    raise typer.Exit(code)


@app.command("tasks")
def tasks_cmd(as_json: bool = JSON_OPT) -> None:
    """List the task suite."""
    from environments.scoring import known_baseline
    from environments.suite import list_tasks

    tasks = list_tasks()
    rows = [{
        "name": t.name, "kind": t.kind, "metric": t.metric, "direction": t.direction,
        "baseline": known_baseline(t), "threshold": t.success_threshold, "tools": t.tools,
        "summary": t.summary, "path": str(t.root),
    } for t in tasks]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} tasks")
    for col in ("name", "kind", "metric", "baseline", "tools", "summary"):
        table.add_column(col)
    for r in rows:
        arrow = "↑" if r["direction"] == "higher" else "↓"
        base = "measure" if r["baseline"] is None else f"{r['baseline']:.4g}"
        table.add_row(r["name"], r["kind"], f"{r['metric']} {arrow}", base, ", ".join(r["tools"]),
                      r["summary"])
    console.print(table)


@app.command("tools")
def tools_cmd(as_json: bool = JSON_OPT) -> None:
    """List the method tools actors can call."""
    from methods.registry import all_tools

    tools = all_tools()
    if as_json:
        typer.echo(json.dumps([{"name": t.name, "description": t.description, "module": t.module,
                                "entry": t.entry, "schema": t.args_model.model_json_schema()}
                               for t in tools.values()], indent=2))
        return
    table = Table(title=f"{len(tools)} method tools")
    table.add_column("name")
    table.add_column("command")
    table.add_column("description")
    for t in tools.values():
        table.add_row(t.name, " ".join(t.argv()), t.description)
    console.print(table)


@app.command("run")
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
            _print_score(s)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    if meta.status == "error":
        raise typer.Exit(1)


def _print_score(s) -> None:
    if s.value is None:
        console.print(f"score: [red]failed[/] ({s.failure}) {s.detail[:500]}")
        return
    imp = "n/a" if s.improvement is None else f"{s.improvement:+.1%}"
    verdict = "[green]success[/]" if s.success else "[yellow]below threshold[/]"
    console.print(f"score: {s.metric} = {s.value:.5g} (baseline {s.baseline}, improvement {imp}, "
                  f"threshold {s.threshold:.0%}) → {verdict}")


@app.command("score")
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
            _print_score(s)
    if as_json:
        typer.echo(json.dumps(scores, indent=2))


@app.command("baseline")
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


@app.command("check-task")
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


def main() -> None:
    app()


if __name__ == "__main__":
    main()
