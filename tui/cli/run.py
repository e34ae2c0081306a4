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
    JSON_OPT,
    NO_MODEL,
    SANDBOX_OPT,
    console,
    err_console,
    fail,
    print_score,
)


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
                default=typer.Option(None, *o.flags, help=hint, show_default=False,
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


PANELS = {"actor": "Actor", "context": "Agent context", "tree": "Tree agent (--agent tree)", "budgets": "Budgets"}


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
    score: bool = typer.Option(True, "--score/--no-score", help="score the run when it ends"),
    as_json: bool = JSON_OPT,
    ctx: typer.Context = None,  # type: ignore[assignment]  # typer passes it
    options: dict[str, Any] | None = None,
) -> None:
    """Let an actor attempt a task; every step is recorded under RUNS_DIR/<run_id>/."""
    from agent.factory import AgentConfigError, make_actor, resolve, resolve_choice
    from agent.fork import ForkError, fork_config, fork_run
    from agent.replay import ReplayError, keep_actions, kept_actions
    from agent.runner import create_run, drive, task_of
    from environments.runs import RunDir
    from environments.scoring import ensure_baseline, score_run
    from environments.task import TaskError
    from sandbox import SandboxError
    from tui.cli.display import hooks_for

    if fork is not None and (resume is not None or task is not None):
        fail("--fork starts a new run from another: give no TASK and no --resume with it")
    if (fork is None) != (at is None):
        fail("--fork RUN_DIR and --at K go together")
    try:
        if fork is not None:
            parent = RunDir.open(fork)
            if (options or {}).get("actions") is not None:
                options = {**(options or {}), "actions": str(Path(options["actions"]).resolve())}
            config, budgets = fork_config(parent, options or {})
            config = resolve(config)
            actor = make_actor(config)  # a bad choice fails here, before anything is written
            given = {name for name in ("sandbox", "runs_dir") if _given(ctx, name)}
            run, task_spec = fork_run(parent, at, actor, runs_dir if "runs_dir" in given else None,
                                      config=config, budgets=budgets,
                                      sandbox=sandbox if "sandbox" in given else None)
            if config.kind == "replay":
                actor = make_actor(ActorConfig.from_meta(run.meta))  # the fork's own actions file
        elif resume is not None:
            run = RunDir.open(resume)
            task_spec = task_of(run)
            config, budgets = build(options or {}, ActorConfig.from_meta(run.meta), run.meta.limits)
            if config.kind == "replay" and (kept := kept_actions(run.path)) is not None:
                config = config.model_copy(update={"actions": str(kept)})
            run.meta.config, run.meta.limits = resolve(config), budgets
            run.save_meta()
        else:
            if task is None:
                fail("give a TASK (or --resume RUN_DIR)")
            config, budgets = build(options or {})
            if config.kind == "research" and config.model is None and \
                    resolve_choice(None, None, None)[0] == "baseline":
                raise AgentConfigError(NO_MODEL)
            if config.actions is not None:
                config = config.model_copy(update={"actions": str(Path(config.actions).resolve())})
            config = resolve(config)
        if fork is None:
            actor = make_actor(config)
        if resume is None and fork is None:
            run, task_spec = create_run(task, actor, runs_dir, config=config, sandbox=sandbox,
                                        budgets=budgets)
            if config.kind == "replay" and config.actions is not None:
                keep_actions(run.path, Path(config.actions))
    except (AgentConfigError, ReplayError, TaskError, FileNotFoundError, ValueError,
            SandboxError, ForkError) as err:
        fail(str(err))
    if not as_json:
        origin = f" (fork of {run.meta.fork.parent} at step {run.meta.fork.step})" if run.meta.fork else ""
        console.print(f"run [bold]{run.meta.run_id}[/] on [bold]{run.meta.task}[/] with "
                      f"{run.meta.model or run.meta.agent} (sandbox {run.meta.sandbox}){origin} → {run.path}")
    meta = drive(run, task_spec, actor, hooks=hooks_for(console, quiet=as_json))
    result = {"run_dir": str(run.path), **meta.model_dump()}
    if score:
        ensure_baseline(task_spec, sandbox=meta.sandbox, on_measure=lambda name: None if as_json else
                        err_console.print(f"measuring {name}'s baseline on this machine (once)…"))
        s = score_run(run, task_spec, sandbox=meta.sandbox)
        result["score"] = s.model_dump()
        if not as_json:
            print_score(s)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    if meta.status == "error":
        raise typer.Exit(1)
