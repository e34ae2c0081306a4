"""One owner of a run's lifecycle: begin it (start, resume, fork), drive it, score it.

Every front end that runs an actor begins the run here: ``labcoat run`` (``tui/cli/run.py``),
the TUI (``LabcoatApp.start_agent``, ``start_human``, ``resume_run`` and a fork by hand, in
their worker threads) and a batch's unit of work (:func:`agent.batch.run_combo`). A person's
run is one more kind (``ActorConfig(kind="human")``: the factory builds a ``HumanActor``, which
the TUI's ``HumanSession`` then feeds from its forms). Each calls one of :func:`start`, :func:`resume`
or :func:`fork` with the typed configuration (:class:`~agent.config.ActorConfig`,
:class:`~environments.record.runs.Budgets`), gets a :class:`Session` (the run directory, its task,
the actor; nothing has acted yet), drives it with its own :class:`~agent.runner.RunHooks`
(the live view) and scores it with :func:`score`, the one function that scores a run folder.

Beginning is split from driving because the TUI shows the run (its screen needs the run
directory) before its worker drives it; the CLI prints the run's name in between.

What one kind of actor needs done with the run's files is that actor's own hook, not a test
of its kind here or in a front end: an actor may define ``on_created(run)``, called once its
run directory exists and before anything acts (the replay actor keeps its actions file there,
:meth:`agent.replay.ReplayActor.on_created`; :class:`agent.actor.BaseActor` gives every actor a
default); resuming or continuing a replay reads its kept file
(:func:`agent.replay.with_kept_actions`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.actor import Actor
from agent.config import ActorConfig
from agent.replay import with_kept_actions
from agent.runner import RunHooks, continue_on, create_run, drive
from environments.imports.mlab import refuse_resume
from environments.record.runs import ENDED_STATUSES, Budgets, RunDir, RunMeta
from environments.task.sandboxing import (
    current_runtime,
    runtime_note,
    set_runtime,
    using_runtime,
)
from environments.task.spec import TaskSpec

if TYPE_CHECKING:
    from environments.scoring.score import Score

__all__ = ["Session", "SessionError", "fork", "preflight", "resume", "score", "start"]


@dataclass
class Session:
    """A run begun, nothing acted yet: its directory, its task as the actor sees it (a batch
    may withhold method tools), and the actor that acts."""

    run: RunDir
    task: TaskSpec
    actor: Actor
    #: what the front end should say before driving (a resumed run moved to another backend)
    note: str | None = None

    def drive(self, hooks: RunHooks | None = None) -> RunMeta:
        """Drive the run to its end (a Final Answer, a budget, a stop, an error); blocking, so
        the TUI calls it from a worker thread."""
        return drive(self.run, self.task, self.actor, hooks=hooks)


def start(task: str | Path, config: ActorConfig, budgets: Budgets | None = None,
          runs_dir: Path = Path("runs"), *, sandbox: str = "auto", batch: str | None = None) -> Session:
    """A new run of ``task`` (a suite name or a task folder) under ``runs_dir``.

    The actor is built before anything is written, so a bad choice (an unknown agent, a model
    without its key) leaves no run directory behind.
    """
    config = _chosen(config)
    actor = _actor(config)
    run, spec = create_run(task, actor, Path(runs_dir), config=config, sandbox=sandbox,
                           budgets=budgets, batch=batch)
    _created(actor, run)
    return Session(run, spec, actor)


def resume(run: RunDir | Path, config: ActorConfig | None = None,
           budgets: Budgets | None = None, *, sandbox: str | None = None) -> Session:
    """The stopped run ``run`` continued in place (``drive`` goes on from its trace; a run
    whose sandbox was lost, ``infrastructure``, from its last recorded step).

    ``config``/``budgets`` (default: what the run stored) replace what ``run.json`` holds, so
    ``labcoat run --resume DIR --max-steps N`` raises a budget and the run records it.
    ``sandbox`` (default: the run's own backend) is :func:`agent.runner.continue_on`'s:
    ``auto`` moves the run to another backend only when its own is not available now. The run
    goes on with the ``--python``/``--device`` it was started with; the session's ``note``
    says so when this process was given others.
    """
    run = run if isinstance(run, RunDir) else RunDir.open(run)
    refuse_resume(run)  # an imported run (MLAgentBench's) is a record: forked, never continued
    note = continue_on(run, sandbox)  # first: a task re-prepared below is on the backend chosen
    told = runtime_note(run.meta.runtime, current_runtime())
    set_runtime(run.meta.runtime)  # the run goes on with its own --python and --device
    note = "; ".join(n for n in (note, told) if n) or None
    task = run.task()
    config = _chosen(with_kept_actions(run.path, config or ActorConfig.from_meta(run.meta)))
    actor = _actor(config)
    run.meta.config, run.meta.budgets = config, budgets or run.meta.budgets
    # continuing a stopped run makes it a resumed one (reports keep those apart); a run that
    # never began, or one that ended and is only driven to be scored again, is not resumed
    run.meta.resumed += run.meta.status not in ("created", *ENDED_STATUSES)
    run.save_meta()
    return Session(run, task, actor, note)


def fork(parent: RunDir | Path, at: int, config: ActorConfig, budgets: Budgets | None = None,
         runs_dir: Path | None = None, *, sandbox: str | None = None) -> Session:
    """A new run continuing ``parent`` from its step ``at`` (:func:`agent.fork.fork_run`:
    beside the parent, on its backend and budgets, unless given). ``config`` is typically
    :func:`agent.fork.fork_config`'s: the parent's with the options given laid over it."""
    from agent.fork import fork_run

    config = _chosen(config)
    actor = _actor(config)
    run, task = fork_run(parent, at, actor, runs_dir, config=config, budgets=budgets, sandbox=sandbox)
    _created(actor, run)
    return Session(run, task, actor)


def score(run: RunDir | Path, *, step: int | None = None, every_step: bool = False,
          points: int | None = None, sandbox: str | None = None, baseline_runs: int = 3,
          on_measure: Callable[[str], None] | None = None, progress: Callable | None = None,
          ) -> list[Score]:
    """Score a run folder: its result (the last step, ``score.json``), step ``step`` (a point
    of the curve, ``scores.json``), or with ``every_step`` every step (``points``: that many
    evenly spaced, the last included) for its curve. A list of the scores made, in step order;
    the last is the one asked for (the run's result, unless ``step`` names another).

    The run's result is only ever its result step scored alone: ``every_step`` keeps a
    ``score.json`` that holds that step as it is (never rewritten from the curve, whose steps
    share a scratch) and scores the step alone only where there is none, one of another step
    (a run resumed past it) or an infrastructure failure (nothing was measured).

    The task's baseline is measured first (``baseline_runs`` times, ``on_measure(task)`` said
    before) when none is known on this backend, or no run of it could have an improvement.
    ``sandbox`` defaults to the backend the run ran on. A tree run cut short (an ``error``) is
    scored on its best node, as a tree search reports its best (``result_step``). It runs
    with the run's own ``--python``/``--device`` (``run.json``'s ``runtime``).
    """
    run = run if isinstance(run, RunDir) else RunDir.open(run)
    with using_runtime(run.meta.runtime):  # scored with the run's own --python and --device
        return _score(run, step, every_step, points, sandbox or run.meta.sandbox, baseline_runs,
                      on_measure, progress)


def _score(run: RunDir, step: int | None, every_step: bool, points: int | None, backend: str,
           baseline_runs: int, on_measure: Callable[[str], None] | None,
           progress: Callable | None) -> list[Score]:
    from agent.tree.view import result_step
    from environments.scoring.baselines import BaselineError, ensure_baseline
    from environments.scoring.score import (
        load_result,
        record_curve,
        score_run,
        score_steps,
    )

    task = run.task()
    if step is None and run.meta.status == "error" and run.meta.infrastructure:
        return [_infrastructure_result(run, task)]
    try:
        ensure_baseline(task, runs=baseline_runs, sandbox=backend, on_measure=on_measure)
    except BaselineError:  # the unmodified task cannot run: scored, with no baseline known
        pass
    if step is not None:
        return [score_run(run, task, step=step, sandbox=backend)]
    best = result_step(run.steps(), task.metric, task.higher_is_better)
    index = len(run.steps()) if best is None else best
    if not every_step:
        return [score_run(run, task, step=best, sandbox=backend, result=True)]
    result = load_result(run.path)
    if result is None or result.step != index or result.failure == "infrastructure":
        result = score_run(run, task, step=index, sandbox=backend, result=True)
    else:
        record_curve(run, [result])
    curve = score_steps(run, task, points=points, sandbox=backend, progress=progress,
                        known={index: result})
    return curve if curve and curve[-1] is result else [*curve, result]


def _infrastructure_result(run: RunDir, task: TaskSpec) -> Score:
    """The result of a run that ended on an infrastructure failure (its model never reached, its
    sandbox lost): nothing of the actor's to judge, so no eval runs and the result, recorded in
    ``score.json``, is that failure (reports count it apart from the actor's failures) until the
    run is resumed and ends by itself."""
    from environments.scoring.evaluate import EvalResult
    from environments.scoring.score import make_score

    detail = ("the run ended on an infrastructure failure, not the actor's, so nothing was evaluated; "
              f"continue it with `labcoat run --resume {run.path}`, then score it")
    score = make_score(task, EvalResult(failure="infrastructure", detail=detail), len(run.steps()))
    run.write_json("score.json", score.model_dump())
    return score


class SessionError(ValueError):
    """A run that cannot begin as asked; the message says why (shown as a usage error)."""


def preflight(config: ActorConfig, task: str | Path) -> None:
    """Refuse, before any run exists, what would only fail at a later step: a replay's actions
    that ``task`` and the actor do not offer (matched as the environment matches them: case and
    spaces aside). Other actors' actions are not known before they act."""
    from agent.factory import AgentConfigError
    from agent.replay import KIND, MODEL_PREFIX, ReplayActor, ReplayError
    from environments.acting.environment import optional_names
    from environments.acting.low_level import LOW_LEVEL_ACTIONS
    from environments.acting.tool_actions import tool_action
    from environments.acting.validation import VALIDATE
    from environments.task.spec import TaskError
    from environments.task.suite import resolve_task

    if config.kind == "pool":  # the research pool's own refusals (agent.pool.checks)
        from agent.pool.checks import check_pool

        try:
            check_pool(config.pool, task)
        except (ValueError, TaskError, KeyError, FileNotFoundError) as err:
            raise SessionError(str(err)) from err
    replay = config.kind == KIND or (config.kind is None and config.actions is not None)
    if not replay and not (config.model or "").startswith(MODEL_PREFIX):
        return
    try:
        actor = _actor(config)
        if not isinstance(actor, ReplayActor):
            return
        spec = resolve_task(task)
    except (AgentConfigError, ReplayError, TaskError, KeyError, ValueError, FileNotFoundError) as err:
        raise SessionError(str(err)) from err
    offered = [a.name for a in (*LOW_LEVEL_ACTIONS, *actor.extra_actions())]
    offered += [tool_action(t).name for t in spec.tools if config.method_tools]
    offered += optional_names(config.enable_actions)
    if spec.validation_budget > 0:
        offered.append(VALIDATE)
    key = {"".join(name.lower().split()) for name in offered}
    unknown = list(dict.fromkeys(p.action for p in actor.actions
                                 if "".join(p.action.lower().split()) not in key))
    if unknown:
        raise SessionError(f"{actor.source}: {spec.name} offers no action "
                           f"{', '.join(map(repr, unknown))} (it offers: {', '.join(offered)})")


def _chosen(config: ActorConfig) -> ActorConfig:
    """``config`` as ``run.json`` stores it: its kind and model chosen (the factory's
    defaults) and a file it names made absolute (a resume may start from elsewhere); an
    answers file that cannot be used is refused here (start, resume and fork alike)."""
    from agent.factory import resolve
    from environments.acting.help_request import HelpError, ScriptedAnswers

    for name in ("actions", "help_answers"):
        if getattr(config, name) is not None:
            config = config.model_copy(update={name: str(Path(getattr(config, name)).resolve())})
    if config.help_answers is not None:  # a bad answers file: refused now, not at the question
        try:
            ScriptedAnswers.from_file(config.help_answers)
        except HelpError as err:
            raise SessionError(f"--help-answers: {err}") from err
    return resolve(config)


def _actor(config: ActorConfig) -> Actor:
    from agent.factory import make_actor

    return make_actor(config)


def _created(actor: Actor, run: RunDir) -> None:
    """The actor's own hook once its run directory exists (the replay actor keeps its file)."""
    actor.on_created(run)
