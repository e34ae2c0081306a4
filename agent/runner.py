"""Driving one run to its end: create or resume the run, loop actor -> Environment, budgets.

The loop is deliberately short; everything else (what an actor is, how a step is recorded,
where code runs) lives behind the Actor protocol, the Environment and the sandbox.
"""

from __future__ import annotations

import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.actor import Actor, ActorError, StoppedWhileWaiting
from agent.config import ActorConfig, Kind
from agent.models.base import unreachable_model
from agent.models.providers import default_fast, provider_of
from environments.acting.environment import environment_for_run
from environments.acting.help_request import HelpDesk, ScriptedAnswers, Unattended
from environments.acting.validation import validation_calls
from environments.record.manifest import ModelUse, RunManifest, machine
from environments.record.runs import (
    BUDGET_STATUSES,
    Budgets,
    RunDir,
    RunMeta,
    RunStatus,
    SandboxEvent,
    Step,
    new_run_id,
    now,
)
from environments.scoring.hidden import note_session
from environments.task.prepare import prepare_task
from environments.task.sandboxing import current_runtime, sandbox_limits
from environments.task.spec import TaskSpec
from environments.task.suite import resolve_task
from sandbox import SandboxError, resolve_kind
from sandbox.base import SandboxLost
from sandbox.factory import continue_on as choose_backend

__all__ = ["Budgets", "RunHooks", "continue_on", "create_run", "drive", "new_meta",
           "resolve_budgets"]


class RunHooks:
    """Callbacks for a live view (the CLI display, the TUI); all optional."""

    stop_requested: bool = False
    #: seconds the view held the run paused (in ``before_step``): not the run's time, so the
    #: time budget and ``totals.seconds`` leave them out
    paused_seconds: float = 0.0
    #: who answers Request Help when the run enables it: a view with a person sets its own
    #: (the TUI's); None: the run's ``help_answers`` file, else nobody (``help_desk_for``)
    help_desk: HelpDesk | None = None

    def before_step(self, run: RunDir) -> None:
        """May block (a paused TUI) or set ``stop_requested``."""

    def after_step(self, run: RunDir, step: Step) -> None:
        pass

    def on_end(self, run: RunDir) -> None:
        pass


def resolve_budgets(task: TaskSpec, budgets: Budgets) -> Budgets:
    """The task's limits fill in budgets the caller left open."""
    return budgets.model_copy(update={
        "max_steps": budgets.max_steps or task.limits.max_steps,
        "max_time": budgets.max_time or task.limits.max_time,
    })


class SeededSandbox:
    """The run's sandbox with ``LABCOAT_SEED`` in every command's environment.

    Tasks have no seed hook of their own, so the run's seed reaches the task's randomness this
    way: a script that wants it reads ``os.environ["LABCOAT_SEED"]``. Everything else is the
    wrapped sandbox's (``__getattr__``), so the Environment cannot tell the difference.
    """

    def __init__(self, inner: Any, seed: int) -> None:
        self._inner, self._seed = inner, seed

    def exec(self, argv: Any, timeout: float | None = None, *, env: dict[str, str] | None = None,
             **kw: Any) -> Any:
        return self._inner.exec(argv, timeout, env={"LABCOAT_SEED": str(self._seed), **(env or {})}, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _kind_of(actor: Actor, model: str | None) -> str | None:
    """The factory kind of an actor built without a config (the shorthand ``create_run`` form)."""
    if actor.kind in typing.get_args(Kind):  # an actor whose own kind is a factory kind
        return actor.kind
    if actor.config_kind is not None:
        return actor.config_kind
    if model:
        return "langchain" if provider_of(model) == "langchain" else "research"
    return None


def create_run(task_ref: str | Path, actor: Actor, runs_dir: Path, *, config: ActorConfig | None = None,
               sandbox: str = "auto", budgets: Budgets | None = None, batch: str | None = None,
               seed: int | None = None, model: str | None = None, agent: str | None = None,
               ) -> tuple[RunDir, TaskSpec]:
    """Prepare the task and lay out a new run directory (nothing acts yet).

    ``config`` is what built ``actor`` (stored whole, for resume); ``agent``/``model``/``seed``
    are short for a config of just those (tests, the TUI's human sessions).
    """
    if config is None:
        config = ActorConfig(kind=agent or _kind_of(actor, model), model=model, seed=seed or 0)
    elif seed is not None or model is not None or agent is not None:
        raise ValueError("create_run takes a config or agent/model/seed, not both")
    source = resolve_task(task_ref)
    sandbox_limits(source)  # limits above this machine's ceilings: refused before anything is made
    task = prepare_task(source, sandbox=sandbox)
    meta = new_meta(task, str(source.root), actor, config, sandbox=sandbox,
                    budgets=resolve_budgets(task, budgets or Budgets()), batch=batch)
    return RunDir.create(Path(runs_dir), meta, task.env_dir), task


def model_uses(models: dict[str, str | None]) -> list[ModelUse]:
    """``{"main": "openai/gpt-4o", ...}`` -> the models with their providers (unset roles left out)."""
    return [ModelUse(role=role, model=m, provider=provider_of(m)) for role, m in models.items() if m]


def new_meta(task: TaskSpec, task_source: str | None, actor: Actor, config: ActorConfig, *,
             sandbox: str, budgets: Budgets, batch: str | None = None) -> RunMeta:
    """The ``run.json`` of a run about to start (a new one, or a fork): a fresh id, the
    runtime this process's sandboxes use (``--python``, ``--device``) and a manifest of this
    machine and the models the config names."""
    fast = config.fast_model
    if fast is None and config.kind == "research" and config.model:
        fast = default_fast(config.model)
    manifest = RunManifest(machine=machine(), started_at=now(), models=model_uses(
        {"main": config.model, "fast": fast, "edit": config.edit_model}))
    return RunMeta(
        run_id=new_run_id(task.name, config.kind or actor.kind), task=task.name, task_root=str(task.root),
        actor=actor.kind, config=config, sandbox=resolve_kind(sandbox), budgets=budgets,
        runtime=current_runtime(), task_source=task_source, batch=batch, manifest=manifest,
    )


def without_method_tools(task: TaskSpec) -> TaskSpec:
    """The task as its actor sees it when the config withholds method tools (``method_tools``).

    The Environment registers an action for each name in ``task.tools``, so an empty list is
    the whole switch: the tools are neither offered in the prompt nor callable (an actor that
    names one gets the unknown-action answer). Scoring does not read ``tools``.
    """
    return task.model_copy(update={"tools": []})


def help_desk_for(config: Any) -> HelpDesk:
    """Headless Request Help: the configuration's answers file, else nobody to ask."""
    answers = getattr(config, "help_answers", None)
    return ScriptedAnswers.from_file(answers) if answers else Unattended()


def drive(run: RunDir, task: TaskSpec, actor: Actor, *, hooks: RunHooks | None = None,
          observation_cap: int | None = None,
          clock: Callable[[], float] = time.perf_counter) -> RunMeta:
    """Run (or resume) the episode until Final Answer, a budget, a stop or an error.

    ``observation_cap`` overrides the run's stored ``config.observation_cap``. ``clock`` is
    what the time budget reads (seconds, any origin): tests pass their own, so that what they
    assert about time budgets does not depend on how loaded the machine is.
    """
    hooks = hooks or RunHooks()
    budgets = run.meta.budgets
    history = run.steps()
    if getattr(run.meta.config, "method_tools", True) is False:
        task = without_method_tools(task)
    try:
        run.restore(len(history))  # a kill between a step and its trace line leaves stray edits
        env = environment_for_run(run, task, extra_actions=actor.extra_actions(),
                                  observation_cap=observation_cap or getattr(run.meta.config,
                                                                             "observation_cap", None),
                                  help_desk=hooks.help_desk or help_desk_for(run.meta.config))
        env.sandbox = SeededSandbox(env.sandbox, run.meta.seed)
        note_session(run.path, task, run.meta.sandbox, len(history))
    except SandboxError as err:  # no sandbox to run in (none available, its Python not built)
        run.finish("error", f"the sandbox could not be opened: {err} (resume with --resume)")
        hooks.on_end(run)
        return run.meta
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
    start = clock()

    def active() -> float:
        """The run's time so far: wall clock since it started, less the pauses."""
        return round(prior_seconds + clock() - start - hooks.paused_seconds, 3)

    manifest = run.meta.manifest = run.meta.manifest or RunManifest(machine=machine(), started_at=now())
    manifest.sandbox = env.sandbox.describe()
    try:
        run.meta.status, run.meta.infrastructure = "running", False
        run.save_meta()
        actor.start(env, history)
        while True:
            if (hit := budgets.exhausted(run.meta.totals, active())) is not None:
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
            # proposing takes time (a person thinking, a slow model): no action starts once the
            # clock ran out meanwhile (tokens and cost are spent already; the action is free)
            if (hit := budgets.out_of_time(active())) is not None:
                status, reason = hit
                break
            obs = env.step(proposal.action, proposal.args, actor=actor.kind, meta=proposal.meta)
            actor.observe(proposal, obs)
            run.meta.totals.seconds = active()
            run.save_meta()
            hooks.after_step(run, env.last_step)
            if obs.done:
                status, reason = "finished", "final answer"
                break
        if status in BUDGET_STATUSES:
            reason = _closing_step(run, env, actor, hooks, reason)
    except ActorError as err:
        status, reason = "error", str(err)
        if unreachable_model(err):  # no answer ever came: the machine's failure, resumable
            reason = (f"{err}; the model could not be reached: an infrastructure failure, not the "
                      f"model's: resume to continue after step {run.meta.totals.steps}")
            run.meta.infrastructure = True
    except StoppedWhileWaiting:
        status, reason = "interrupted", "stopped by the user"
    except KeyboardInterrupt:
        status, reason = "interrupted", "Ctrl-C; resume with --resume"
    except SandboxLost as lost:  # not the actor's doing: its step is not recorded (Environment)
        status, reason = "error", (f"{lost}; an infrastructure failure, not the actor's: resume "
                                   f"to continue after step {run.meta.totals.steps}")
        run.meta.infrastructure = True
        run.meta.sandbox_events.append(SandboxEvent(kind="lost", backend=lost.backend,
                                                    step=run.meta.totals.steps, detail=lost.detail))
    except Exception as err:
        status, reason = "error", _crash_reason(err)
        raise
    finally:
        env.sandbox.close()
        getattr(actor, "on_end", lambda: None)()  # an Actor that is not a BaseActor may lack it
        run.meta.totals.seconds = active()
        manifest.ended_at, manifest.wall_seconds = now(), run.meta.totals.seconds
        manifest.validations = validation_calls(run.steps())
        run.finish(status, reason)
        hooks.on_end(run)
    return run.meta



def continue_on(run: RunDir, asked: str | None, *,
                why_not: Callable[[str], str | None] | None = None) -> str | None:
    """Choose the backend a stopped run continues on (:func:`sandbox.factory.continue_on`),
    record a change in ``sandbox_events`` and ``run.meta.sandbox`` (saved by the caller), and
    say so in a sentence (None: it stays on its own). What ran before stays as recorded: the
    trace and snapshots do not depend on the backend."""
    recorded = run.meta.sandbox
    chosen = choose_backend(recorded, asked, lost=run.meta.infrastructure, why_not=why_not)
    if chosen is None:
        return None
    new, detail = chosen
    run.meta.sandbox_events.append(SandboxEvent(kind="switched", backend=new, previous=recorded,
                                                step=run.meta.totals.steps, detail=detail))
    run.meta.sandbox = new
    return f"continuing on sandbox {new} instead of {recorded}: {detail}"


def _closing_step(run: RunDir, env: Any, actor: Actor, hooks: RunHooks, reason: str) -> str:
    """After a budget ran out, the one step an actor may still end with (its optional
    ``closing(env)`` proposal): only a free action (``ActionSpec.free``: no command, no model
    call), so nothing is computed past the budget, yet the run can end with a workspace the
    actor chose (the tree agent's best node, not the node the budget cut short). It is recorded
    like any step, marked ``meta["closing"]``, and the run keeps the budget's status."""
    proposal = actor.closing(env)
    if proposal is None:
        return reason
    spec = env.lookup(proposal.action)
    if spec is None or not spec.free:
        return (f"{reason}; the actor's closing step {proposal.action!r} was refused (after a "
                "budget only a free action may run)")
    obs = env.step(spec.name, proposal.args, actor=actor.kind, meta={**proposal.meta, "closing": True})
    actor.observe(proposal, obs)
    run.save_meta()
    hooks.after_step(run, env.last_step)
    return f"{reason}; closing step {env.step_count}, {spec.name}: {'failed' if obs.error else 'done'}"


def _crash_reason(err: BaseException) -> str:
    """What run.json says of a host error: its type and message (the traceback goes to stderr)."""
    return f"host error: {type(err).__name__}: {err} (resume with --resume)"
