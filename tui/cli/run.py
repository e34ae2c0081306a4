"""``labcoat run``: let an actor attempt a task, live, then score it."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer

from agent.config import ActorConfig, Option, build, options
from tui.cli.common import (
    DEVICE_OPT,
    JSON_OPT,
    NO_MODEL,
    PASS_ENV_OPT,
    PYTHON_OPT,
    SANDBOX_OPT,
    console,
    err_console,
    fail,
    known_task,
    pass_env,
    print_score,
    use_runtime,
)
from tui.terminal_text import safe_line, safe_text


def unenforced_caps(backend: str) -> str | None:
    """The line ``labcoat run`` says when the run's sandbox cannot enforce a cap its task
    declares here (as a non-root user: the process count, CPU, a tree's memory, the disk)."""
    from sandbox.caps import unenforced_note
    from sandbox.factory import backend_class

    try:
        return unenforced_note(backend_class(backend).isolation())
    except ValueError:  # a backend this labcoat does not know: the run itself says so
        return None


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)


def config_options(opts: list[Option]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command whose signature also has one typer option per ``Option`` (agent/config.py);
    the values given reach the command as ``options`` (name -> value, ``None`` = not given).

    Every flag defaults to "not given", so a resumed run changes only what was named; the
    model's own default shows in the help.
    """
    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(func)
        base = [p for p in sig.parameters.values() if p.name != "options"]
        names = {o.name for o in opts}
        generated = []
        for o in opts:
            hint = o.hint + (f" [{' | '.join(o.choices)}]" if o.choices else "")
            generated.append(inspect.Parameter(
                o.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[o.type],
                default=typer.Option(None, *o.flags, help=hint, show_default=False, metavar=o.metavar,
                                     rich_help_panel=PANELS[o.group])))

        def command(**kw: Any) -> Any:
            given = {n: kw.pop(n) for n in list(kw) if n in names}
            return func(options=given, **kw)

        command.__name__, command.__doc__ = func.__name__, func.__doc__
        command.__signature__ = sig.replace(parameters=[
            *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in base), *generated])
        command.__annotations__ = {p.name: p.annotation for p in command.__signature__.parameters.values()}
        return command
    return wrap


def check_actions(config: ActorConfig, task: str) -> None:
    """Exit with a usage error when ``config`` could not act on ``task`` as asked (a replay's
    actions the task does not offer), before the run starts rather than at its step."""
    from agent.session import SessionError, preflight

    try:
        preflight(config, task)
    except SessionError as err:
        fail(str(err))


PANELS = {"actor": "Actor", "context": "Agent context", "tree": "Tree agent (--agent tree)",
          "pool": "Research pool (--agent pool)", "budgets": "Budgets"}


def _given(ctx: typer.Context | None, name: str) -> bool:
    """Whether ``name`` was typed on the command line (a fork keeps its parent's otherwise)."""
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is not None and source.name != "DEFAULT"  # by name: typer vendors its own click


@config_options(options())
def run_cmd(
    task: Optional[str] = typer.Argument(None, help="suite task name or task folder"),
    sandbox: str = SANDBOX_OPT,
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="continue this run directory; "
                                          "options given replace what it stored (a budget: raised)"),
    fork: Optional[Path] = typer.Option(None, "--fork", help="start a new run from this run "
                                        "directory's step --at K (its steps 1..K and workspace); "
                                        "options given replace what it stored"),
    at: Optional[int] = typer.Option(None, "--at", help="with --fork: the step to continue from "
                                     "(0 = before the first step)"),
    node: Optional[int] = typer.Option(None, "--node", help="with --fork, instead of --at: a "
                                       "pool run's node (the step that recorded it)"),
    score: bool = typer.Option(True, "--score/--no-score", help="score the run when it ends"),
    python: Optional[str] = PYTHON_OPT,
    device: Optional[str] = DEVICE_OPT,
    allow_env: Optional[list[str]] = PASS_ENV_OPT,
    as_json: bool = JSON_OPT,
    ctx: typer.Context = None,  # type: ignore[assignment]  # typer passes it
    options: dict[str, Any] | None = None,
) -> None:
    """Let an actor attempt a task; every step is recorded under RUNS_DIR/<run_id>/."""
    from agent import session
    from agent.factory import AgentConfigError, resolve_choice
    from agent.fork import ForkError, fork_config
    from agent.replay import ReplayError
    from environments.record.runs import RunDir
    from environments.task.spec import TaskError
    from sandbox import SandboxError
    from tui.cli.display import hooks_for

    use_runtime(python, device)
    pass_env(allow_env)
    if fork is not None and (resume is not None or task is not None):
        fail("--fork starts a new run from another: give no TASK and no --resume with it")
    if node is not None and (fork is None or at is not None):
        fail("--node ID goes with --fork RUN_DIR, instead of --at K")
    if (fork is None) != (at is None and node is None):
        fail("--fork RUN_DIR and --at K go together (or --node ID: a pool run's node)")
    try:  # one call of the session begins the run, whichever way it begins
        if fork is not None:
            parent = RunDir.open(fork)
            if node is not None:  # a pool node: the step whose snapshot it is
                from agent.pool.records import step_of_node

                at = step_of_node(parent.steps(), node)
            config, budgets = fork_config(parent, options or {})
            given = {name for name in ("sandbox", "runs_dir") if _given(ctx, name)}
            begun = session.fork(parent, at, config, budgets, runs_dir if "runs_dir" in given else None,
                                 sandbox=sandbox if "sandbox" in given else None)
        elif resume is not None:
            run = RunDir.open(resume)
            config, budgets = build(options or {}, ActorConfig.from_meta(run.meta), run.meta.budgets)
            begun = session.resume(run, config, budgets,
                                   sandbox=sandbox if _given(ctx, "sandbox") else None)
        else:
            if task is None:
                fail("give a TASK (or --resume RUN_DIR)")
            known_task(task)
            config, budgets = build(options or {})
            check_actions(config, task)
            if config.kind == "research" and config.model is None and \
                    resolve_choice(None, None, None)[0] == "baseline":
                raise AgentConfigError(NO_MODEL)
            begun = session.start(task, config, budgets, runs_dir, sandbox=sandbox)
    except (AgentConfigError, ReplayError, TaskError, FileNotFoundError, ValueError,
            SandboxError, ForkError) as err:
        fail(str(err))
    run = begun.run
    if not as_json:
        origin = f" (fork of {run.meta.fork.parent} at step {run.meta.fork.step})" if run.meta.fork else ""
        console.print(safe_line(  # the task's folder name and the model string: never markup
            "run ", (run.meta.run_id, "bold"), " on ", (run.meta.task, "bold"),
            f" with {run.meta.model or run.meta.agent} (sandbox {run.meta.sandbox}){origin} → {run.path}"))
        if begun.note:  # resumed on another backend, or told another runtime than its own
            err_console.print(safe_text(begun.note))
        gaps = unenforced_caps(run.meta.sandbox)
        if gaps:
            err_console.print(safe_text(gaps))
    meta = begun.drive(hooks_for(console, quiet=as_json))
    result = {"run_dir": str(run.path), **meta.model_dump()}
    if score:
        [s] = session.score(run, on_measure=lambda name: None if as_json else err_console.print(
            safe_text(f"measuring {name}'s baseline on this machine (once)…")))
        result["score"] = s.model_dump()
        if not as_json:
            print_score(s, so_far=meta.totals.steps if meta.status == "interrupted" else None)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    if meta.status == "error":
        raise typer.Exit(1)
