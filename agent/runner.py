"""Driving one run to its end: create or resume the run, loop actor -> Environment, budgets.

The loop is deliberately short; everything else (what an actor is, how a step is recorded,
where code runs) lives behind the Actor protocol, the Environment and the sandbox.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from agent.actor import Actor, ActorError
from environments.environment import environment_for_run
from environments.prepare import prepare_task
from environments.runs import RunDir, RunMeta, RunStatus, Step, new_run_id
from environments.suite import resolve_task
from environments.task import TaskSpec, load_task
from sandbox import resolve_kind


class Budgets(BaseModel):
    """Limits on a run; hitting one ends it cleanly with that reason as its status."""

    max_steps: int | None = Field(None, ge=1)
    max_time: float | None = Field(None, gt=0, description="seconds of the run's wall clock, "
                                   "pauses in the TUI not counted")
    max_tokens: int | None = Field(None, ge=1)
    max_cost: float | None = Field(None, gt=0, description="US dollars")

    def exhausted(self, meta: RunMeta, elapsed: float) -> tuple[RunStatus, str] | None:
        t = meta.totals
        if self.max_steps is not None and t.steps >= self.max_steps:
            return "max_steps", f"reached {self.max_steps} steps"
        if self.max_time is not None and elapsed >= self.max_time:
            return "max_time", f"used {elapsed:.0f} s of {self.max_time:g} s"
        if self.max_tokens is not None and t.tokens_in + t.tokens_out >= self.max_tokens:
            return "max_tokens", f"used {t.tokens_in + t.tokens_out} of {self.max_tokens} tokens"
        if self.max_cost is not None and t.cost >= self.max_cost:
            return "max_cost", f"spent ${t.cost:.4f} of ${self.max_cost:g}"
        return None


class RunHooks:
    """Callbacks for a live view (the CLI display, the TUI); all optional."""

    stop_requested: bool = False
    #: seconds the view held the run paused (in ``before_step``): not the run's time, so the
    #: time budget and ``totals.seconds`` leave them out
    paused_seconds: float = 0.0

    def before_step(self, run: RunDir) -> None:
        """May block (a paused TUI) or set ``stop_requested``."""

    def after_step(self, run: RunDir, step: Step) -> None:
        pass

    def on_end(self, run: RunDir) -> None:
        pass


def _resolve_budgets(task: TaskSpec, budgets: Budgets) -> Budgets:
    """The task's limits fill in budgets the caller left open."""
    return budgets.model_copy(update={
        "max_steps": budgets.max_steps or task.limits.max_steps,
        "max_time": budgets.max_time or task.limits.max_time,
    })


def create_run(task_ref: str | Path, actor: Actor, runs_dir: Path, *, sandbox: str = "auto",
               seed: int = 0, model: str | None = None, agent: str = "",
               budgets: Budgets | None = None, settings: dict | None = None) -> tuple[RunDir, TaskSpec]:
    """Prepare the task and lay out a new run directory (nothing acts yet)."""
    source = resolve_task(task_ref)
    task = prepare_task(source)
    budgets = _resolve_budgets(task, budgets or Budgets())
    meta = RunMeta(
        run_id=new_run_id(task.name, agent or actor.kind), task=task.name, task_root=str(task.root),
        actor=actor.kind, agent=agent or actor.kind, model=model, seed=seed,
        sandbox=resolve_kind(sandbox), limits=budgets.model_dump(),
        settings={"task_source": str(source.root), **(settings or {})},
    )
    return RunDir.create(Path(runs_dir), meta, task.env_dir), task


def task_of(run: RunDir) -> TaskSpec:
    """The run's prepared task, re-preparing it if the cache was cleared since."""
    root = Path(run.meta.task_root)
    if root.is_dir():
        return load_task(root, run.meta.task)
    source = run.meta.settings.get("task_source") or run.meta.task
    return prepare_task(resolve_task(source))


def drive(run: RunDir, task: TaskSpec, actor: Actor, *, hooks: RunHooks | None = None,
          observation_cap: int | None = None) -> RunMeta:
    """Run (or resume) the episode until Final Answer, a budget, a stop or an error."""
    hooks = hooks or RunHooks()
    budgets = Budgets.model_validate(run.meta.limits)
    history = run.steps()
    try:
        run.restore(len(history))  # a kill between a step and its trace line leaves stray edits
        env = environment_for_run(run, task, extra_actions=actor.extra_actions(),
                                  observation_cap=observation_cap)
    except Exception as err:
        run.finish("error", _crash_reason(err))
        hooks.on_end(run)
        raise
    # Until the loop says how the run ended, it ended in a crash: a host error (an exception
    # of labcoat's, or anything not caught below) is recorded as such, never as "finished".
    status: RunStatus = "error"
    reason = "the host process stopped unexpectedly"
    if env.done:  # resuming a run that already gave its Final Answer: nothing to do
        env.sandbox.close()
        hooks.on_end(run)
        return run.meta
    prior_seconds = run.meta.totals.seconds
    start = time.perf_counter()

    def active() -> float:
        """The run's time so far: wall clock since it started, less the pauses."""
        return round(prior_seconds + time.perf_counter() - start - hooks.paused_seconds, 3)

    try:
        run.meta.status = "running"
        run.save_meta()
        actor.start(env, history)
        while True:
            if (hit := budgets.exhausted(run.meta, active())) is not None:
                status, reason = hit
                break
            hooks.before_step(run)
            if hooks.stop_requested:
                status, reason = "interrupted", "stopped by the user"
                break
            proposal = actor.propose(env)
            if proposal is None:
                status, reason = "finished", "the actor stopped without a Final Answer"
                break
            obs = env.step(proposal.action, proposal.args, actor=actor.kind, meta=proposal.meta)
            actor.observe(proposal, obs)
            run.meta.totals.seconds = active()
            run.save_meta()
            hooks.after_step(run, env.last_step)
            if obs.done:
                status, reason = "finished", "final answer"
                break
    except ActorError as err:
        status, reason = "error", str(err)
    except KeyboardInterrupt:
        status, reason = "interrupted", "interrupted (Ctrl-C); resume with --resume"
    except Exception as err:
        status, reason = "error", _crash_reason(err)
        raise
    finally:
        env.sandbox.close()
        run.meta.totals.seconds = active()
        run.finish(status, reason)
        hooks.on_end(run)
    return run.meta


def _crash_reason(err: BaseException) -> str:
    """What run.json says of a host error: its type and message (the traceback goes to stderr)."""
    return f"host error: {type(err).__name__}: {err} (resume with --resume)"
