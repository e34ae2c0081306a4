"""``labcoat run``: let an actor attempt a task, live, then score it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from tui.common import (
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


def run_cmd(
    task: Optional[str] = typer.Argument(None, help="suite task name or task folder"),
    model: Optional[str] = typer.Option(
        None, "--model", help="provider/model: openai/…, anthropic/…, langchain/mod:Class, scripted/FILE, "
        "baseline/hparam (default: a provider's model when its key is set, else baseline/hparam)"),
    mode: str = typer.Option("react", "--mode", help="react (text format) | tools (native tool calls)"),
    fast_model: Optional[str] = typer.Option(None, "--fast-model", help="summaries, Understand File, Reflection"),
    edit_model: Optional[str] = typer.Option(None, "--edit-model", help="Edit Script (AI) (default: --model)"),
    agent: Optional[str] = typer.Option(None, "--agent", help="research | baseline | langchain | replay"),
    actions: Optional[Path] = typer.Option(None, "--actions", help="JSONL actions for --agent replay"),
    max_steps: Optional[int] = typer.Option(None, "--max-steps"),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="seconds"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="input + output tokens"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="US dollars"),
    keep_steps: int = typer.Option(3, "--keep-steps", help="recent steps the agent sees whole"),
    summarize_over: int = typer.Option(1500, "--summarize-over",
                                       help="observations longer than this (chars) are summarised by the "
                                       "fast model (the latest is still shown whole up to 5000); 0 = never"),
    fold_repeats: int = typer.Option(5, "--fold-repeats",
                                     help="a script's output lines that differ only in their numbers, this "
                                     "many or more in a row, are shown to the agent as a template and a "
                                     "table (lossless); 0 = never"),
    observation_cap: int = typer.Option(10_000, "--observation-cap",
                                        help="characters of an observation the actor is shown "
                                        "(head and tail kept; the trace keeps it whole)"),
    sandbox: str = SANDBOX_OPT,
    runs_dir: Path = typer.Option(Path("runs"), "--runs-dir"),
    seed: int = typer.Option(0, "--seed"),
    resume: Optional[Path] = typer.Option(None, "--resume", help="continue this run directory"),
    score: bool = typer.Option(True, "--score/--no-score", help="score the run when it ends"),
    as_json: bool = JSON_OPT,
) -> None:
    """Let an actor attempt a task; every step is recorded under RUNS_DIR/<run_id>/."""
    from agent.factory import AgentConfigError, make_actor, resolve_choice
    from agent.replay import ReplayError, keep_actions, kept_actions
    from agent.runner import Budgets, create_run, drive, task_of
    from environments.runs import RunDir
    from environments.scoring import ensure_baseline, score_run
    from environments.task import TaskError
    from sandbox import SandboxError
    from tui.display import hooks_for

    try:
        settings: dict = {}
        if resume is not None:
            run = RunDir.open(resume)
            task_spec = task_of(run)
            s = run.meta.settings
            agent = agent or s.get("agent_type")
            model = model or run.meta.model
            mode = s.get("mode", mode)
            fast_model, edit_model = fast_model or s.get("fast_model"), edit_model or s.get("edit_model")
            context = s.get("context")
            actions = actions or kept_actions(run.path)
            raised = {k: v for k, v in {"max_steps": max_steps, "max_time": max_time, "max_tokens": max_tokens,
                                        "max_cost": max_cost}.items() if v is not None}
            if raised:  # continuing a run that hit a budget: give it more
                run.meta.limits.update(raised)
                run.save_meta()
        else:
            context = {"keep_last": keep_steps, "summarize_over": summarize_over, "fold_repeats": fold_repeats}
        if agent == "research" and model is None and resolve_choice(None, None, None)[0] == "baseline":
            raise AgentConfigError(NO_MODEL)
        agent, model = resolve_choice(agent, model, actions)
        actor = make_actor(agent, actions=actions, model=model, fast_model=fast_model,
                           edit_model=edit_model, mode=mode, context=context)
        if resume is None:
            if task is None:
                fail("give a TASK (or --resume RUN_DIR)")
            budgets = Budgets(max_steps=max_steps, max_time=max_time, max_tokens=max_tokens,
                              max_cost=max_cost)
            settings = {"agent_type": agent, "mode": mode, "fast_model": fast_model,
                        "edit_model": edit_model, "context": context,
                        "observation_cap": observation_cap}
            run, task_spec = create_run(task, actor, runs_dir, sandbox=sandbox, seed=seed, model=model,
                                        agent=agent, budgets=budgets, settings=settings)
            if agent == "replay" and actions is not None:
                keep_actions(run.path, actions)
    except (AgentConfigError, ReplayError, TaskError, FileNotFoundError, ValueError,
            SandboxError) as err:
        fail(str(err))
    if not as_json:
        console.print(f"run [bold]{run.meta.run_id}[/] on [bold]{run.meta.task}[/] with "
                      f"{run.meta.model or run.meta.agent} (sandbox {run.meta.sandbox}) → {run.path}")
    meta = drive(run, task_spec, actor, hooks=hooks_for(console, quiet=as_json),
                 observation_cap=run.meta.settings.get("observation_cap", observation_cap))
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
