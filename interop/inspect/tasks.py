"""labcoat's suite as Inspect tasks: ``inspect eval labcoat/<task> --model <provider/model>``.

Each suite task is registered with inspect_ai as ``labcoat/<name>`` (``labcoat/digits``), and
``labcoat/task`` takes any task folder (``-T task=PATH``). One sample per task: its input is the
task's research problem. Nothing here re-implements labcoat; Inspect's model is one more actor:

- **the run**: the task's setup (:func:`labcoat_run`, kept when ``--solver`` replaces the
  solver) begins a labcoat run through :func:`agent.session.start` (a run by hand,
  ``ActorConfig(kind="human")``) under ``runs_dir`` and drives it with
  :class:`agent.human.HumanRun`: the same ``drive`` loop, Environment, sandbox, budgets, trace,
  snapshots and ``run.json`` as any labcoat run, its steps recorded with actor ``inspect`` (the
  Inspect model in each step's ``meta``). The run folder is an ordinary one, so ``labcoat
  score``/``report``/``verify`` work on it. A sample that fails, or is not scored, leaves its
  run ``interrupted`` (resumable), never live (:func:`_cleanup`).
- **the tools**: every action the run's Environment offers (the low-level actions, the task's
  method tools, Validate Submission where declared) is an Inspect tool of the same JSON Schema,
  named as ``--mode tools`` names it (``Edit Script (AI)`` -> ``Edit_Script_AI``); a call is one
  recorded step, run in labcoat's sandbox, and returns the observation's text.
- **the solver** (:func:`labcoat_agent`): call the model with the tools until it calls
  ``Final_Answer``, calls no tool, a labcoat budget ends the run, or an Inspect limit ends the
  sample.
- **the scorer** (:func:`labcoat_scorer`): the run ended (``finished``: a sample that ended
  without a Final Answer is the actor stopping), then scored by :func:`agent.session.score`,
  labcoat's one trusted scorer (``score.json`` in the run folder). The value is the normalized
  score (0 at the task's baseline anchor, 1 at its reference) where the task has anchors, else
  the improvement over the baseline; a failure (no submission, an eval error) counts 0, as
  labcoat's reports count it. ``metadata`` holds labcoat's whole verdict (value, baseline,
  improvement, success, normalized, failure, the run folder).

Task parameters (``-T``): ``sandbox`` (auto, local, docker; none only when named),
``runs_dir`` (default ``runs``), ``max_steps``, ``max_time`` (labcoat's budgets; default the
task's limits), ``seed``, ``baseline_runs`` (measurements when no baseline is known yet).
"""

from __future__ import annotations

import copy
import functools
import threading
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai._util.registry import (
    RegistryInfo,
    registry_add,
    registry_info,
    registry_tag,
)
from inspect_ai.dataset import Sample
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Target,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver, system_message
from inspect_ai.tool import Tool, ToolDef, ToolParams

from agent import session
from agent.config import ActorConfig
from agent.human import HumanActor, HumanRun, RunOver
from agent.tools_mode import tool_name
from environments.acting.actions import ActionSpec
from environments.record.runs import Budgets
from environments.task.suite import resolve_task, suite_task_dirs
from environments.untrusted.words import gain
from environments.untrusted.words import metric as measurement

__all__ = ["NAMESPACE", "InspectHands", "labcoat_agent", "labcoat_run", "labcoat_scorer",
           "labcoat_task", "success_rate"]

#: the namespace of labcoat's tasks in Inspect's registry (its entry point's name)
NAMESPACE = "labcoat"
#: where a sample's store keeps its run folder
RUN_KEY = "labcoat:run"
#: the actor kind a step taken through Inspect is recorded with
ACTOR = "inspect"

SYSTEM = """You are an ML researcher working on a research task in a workspace of files.
Use the tools to list, read, write and run files in the workspace; each call is one recorded
step, and scripts run in a sandbox. When you are done, call Final_Answer with a summary of what
you changed and why: the workspace as it is then is scored by the task's own evaluation."""

#: the runs this process drives, by run folder (a sample's store holds only the path)
_LIVE: dict[str, HumanRun] = {}
_LIVE_LOCK = threading.Lock()


class InspectHands(HumanActor):
    """The hands of an Inspect model: a :class:`~agent.human.HumanActor` whose proposals come
    from Inspect's tool calls, its steps recorded as ``inspect``'s."""

    kind = ACTOR


def labcoat_task(task_ref: str | Path, *, sandbox: str = "auto", runs_dir: str | Path = "runs",
                 max_steps: int | None = None, max_time: float | None = None, seed: int = 0,
                 baseline_runs: int = 3, name: str | None = None) -> Task:
    """An Inspect task of a labcoat task (a suite name or a task folder)."""
    spec = resolve_task(task_ref)
    runs = Path(runs_dir).expanduser().resolve()  # Inspect may change directory later
    budgets = Budgets(max_steps=max_steps, max_time=max_time)
    sample = Sample(input=spec.research_problem, id=spec.name,
                    metadata={"task": spec.name, "metric": spec.metric, "direction": spec.direction})
    return Task(
        dataset=[sample],
        setup=labcoat_run(str(spec.root), sandbox=sandbox, runs_dir=str(runs),
                          budgets=budgets.model_dump(), seed=seed),
        solver=[system_message(SYSTEM), labcoat_agent()],
        cleanup=_cleanup,
        scorer=labcoat_scorer(baseline_runs=baseline_runs),
        name=name or f"{NAMESPACE}/{spec.name}",
        metadata={"labcoat_task": spec.name, "sandbox": sandbox, "runs_dir": str(runs)},
    )


@solver
def labcoat_run(task_root: str, sandbox: str = "auto", runs_dir: str = "runs",
                budgets: dict[str, Any] | None = None, seed: int = 0) -> Solver:
    """Begin the sample's labcoat run and offer its actions as the sample's tools."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        hands = await anyio.to_thread.run_sync(functools.partial(
            _begin, task_root, sandbox, Path(runs_dir), Budgets(**(budgets or {})), seed))
        path = str(hands.run.path)
        with _LIVE_LOCK:
            _LIVE[path] = hands
        state.store.set(RUN_KEY, path)
        model = str(state.model)
        state.tools = [action_tool(hands, spec, model) for spec in hands.actions.values()]
        return state

    return solve


def _begin(task_root: str, sandbox: str, runs_dir: Path, budgets: Budgets, seed: int) -> HumanRun:
    """A new run of the task through labcoat's session, driven in its own thread."""
    begun = session.start(task_root, ActorConfig(kind="human", seed=seed), budgets, runs_dir,
                          sandbox=sandbox)
    begun.run.meta.actor = ACTOR
    begun.run.save_meta()
    return HumanRun(begun.run, begun.task, InspectHands())


def action_tool(hands: HumanRun, spec: ActionSpec, model: str | None = None) -> Tool:
    """One of the run's actions as an Inspect tool: same schema, one recorded step a call (its
    ``meta`` names the Inspect model that called it)."""
    schema = _inlined(spec.json_schema())
    params = ToolParams(properties=schema.get("properties", {}), required=schema.get("required", []))

    async def execute(**kwargs: Any) -> str:
        try:
            obs = await anyio.to_thread.run_sync(hands.actor.act, spec.name, kwargs,
                                                 {"inspect_model": model} if model else None)
        except RunOver as over:
            return f"{over}: no further actions are taken."
        return obs.text

    return ToolDef(execute, name=tool_name(spec.name), description=spec.description,
                   parameters=params).as_tool()


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its local ``$ref``s replaced by what they name (Inspect's tool
    parameters carry no ``$defs``)."""
    defs = schema.get("$defs", {})

    def walk(node: Any, depth: int = 0) -> Any:
        if depth > 20:
            return node
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/") and ref[8:] in defs:
                merged = {**copy.deepcopy(defs[ref[8:]]), **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged, depth + 1)
            return {k: walk(v, depth + 1) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v, depth + 1) for v in node]
        return node

    return walk(schema)


@solver
def labcoat_agent() -> Solver:
    """Call the model with the run's tools, one round of tool calls at a time, until it gives
    its Final Answer, calls no tool, or the labcoat run ends (a budget)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        hands = _live(state)
        while hands is None or not hands.ended:
            state = await generate(state, tool_calls="single")
            if state.completed or not state.output.message.tool_calls:
                break
        return state

    return solve


def _live(state: TaskState) -> HumanRun | None:
    path = state.store.get(RUN_KEY)
    with _LIVE_LOCK:
        return _LIVE.get(path) if path else None


async def _end(state: TaskState, status: str = "finished",
               reason: str = "the Inspect sample ended without a Final Answer") -> None:
    """End the sample's run if it is still live: a sample over without a Final Answer is its
    actor stopping (``finished``, so scored); drive's thread closes the sandbox."""
    hands = _live(state)
    if hands is not None and not hands.ended:
        await anyio.to_thread.run_sync(functools.partial(hands.close, status, reason))


async def _cleanup(state: TaskState) -> None:
    """After the scorer, and after an error: the run ended and forgotten. A run still live here
    was not scored (the sample failed, or ``--no-score``): ``interrupted``, resumable."""
    await _end(state, "interrupted", "the Inspect sample ended before it was scored (an error, "
               "or --no-score)")
    path = state.store.get(RUN_KEY)
    if path:
        with _LIVE_LOCK:
            _LIVE.pop(path, None)


@metric
def success_rate() -> Metric:
    """The share of samples labcoat's scorer counts a success (the task's threshold met)."""

    def compute(scores: list[SampleScore]) -> float:
        if not scores:
            return 0.0
        return sum(bool((s.score.metadata or {}).get("success")) for s in scores) / len(scores)

    return compute


@scorer(metrics=[mean(), stderr(), success_rate()])
def labcoat_scorer(baseline_runs: int = 3):
    """labcoat's trusted scorer over the sample's run folder (:func:`agent.session.score`)."""

    async def score(state: TaskState, target: Target) -> Score:
        path = state.store.get(RUN_KEY)
        if not path:
            return Score(value=0.0, explanation="no labcoat run was begun for this sample",
                         metadata={"failure": "not_scored", "success": False})
        await _end(state)
        scored = await anyio.to_thread.run_sync(functools.partial(
            session.score, Path(path), baseline_runs=baseline_runs))
        result = scored[-1]
        headline = result.normalized if result.normalized is not None else result.improvement
        verdict = result.model_dump(mode="json")
        return Score(
            value=0.0 if result.failure is not None or headline is None else float(headline),
            answer=_final_answer(path),
            explanation=_explain(result),
            metadata={**verdict, "run": path},
        )

    return score


def _final_answer(path: str) -> str | None:
    from environments.record.runs import RunDir

    return RunDir.open(Path(path)).meta.final_answer


def _explain(result: Any) -> str:
    """labcoat's verdict in a line (its own wording of a measurement and a gain)."""
    if result.failure is not None:
        return f"{result.failure}: {result.detail}".rstrip(": ")
    norm = "" if result.normalized is None else f", normalized {result.normalized:.3f}"
    verdict = "success" if result.success else f"not a success (needs {gain(result.threshold)})"
    return (f"{result.metric} {measurement(result.value)} against baseline {measurement(result.baseline)}: "
            f"{gain(result.improvement)}{norm}; {verdict}")


# ---- the registry: labcoat/<suite task>, and labcoat/task for any folder ---------------------

def _registered(factory: Any, name: str) -> Any:
    """``factory`` as Inspect task ``name``, whatever namespace Inspect would infer from where
    this module is installed: from site-packages it prefixes the top-level package
    (``interop/labcoat/digits``); the entry point is ``labcoat``, so the registry entry and the
    tasks it makes (their logs, ``inspect eval-retry``) are renamed to ``name``."""
    wrapped = task(name=name)(factory)
    info = registry_info(wrapped)
    if info.name == name:
        return wrapped
    info = RegistryInfo(type="task", name=name, metadata=info.metadata)

    @functools.wraps(wrapped)
    def renamed(*args: Any, **kwargs: Any) -> Task:
        made = wrapped(*args, **kwargs)
        registry_tag(factory, made, info, *args, **kwargs)
        return made

    registry_add(renamed, info)
    return renamed


def _suite_factory(suite_name: str) -> Any:
    def factory(sandbox: str = "auto", runs_dir: str = "runs", max_steps: int | None = None,
                max_time: float | None = None, seed: int = 0, baseline_runs: int = 3) -> Task:
        return labcoat_task(f"suite:{suite_name}", sandbox=sandbox, runs_dir=runs_dir,
                            max_steps=max_steps, max_time=max_time, seed=seed,
                            baseline_runs=baseline_runs)

    factory.__name__ = factory.__qualname__ = suite_name.replace("-", "_")
    factory.__doc__ = f"labcoat's suite task {suite_name} (its research problem, actions and scorer)."
    return factory


def any_task(task: str, sandbox: str = "auto", runs_dir: str = "runs", max_steps: int | None = None,
             max_time: float | None = None, seed: int = 0, baseline_runs: int = 3) -> Task:
    """Any labcoat task: a suite name, ``suite:NAME`` or a task folder (``-T task=...``)."""
    return labcoat_task(task, sandbox=sandbox, runs_dir=runs_dir, max_steps=max_steps,
                        max_time=max_time, seed=seed, baseline_runs=baseline_runs)


TASKS: dict[str, Any] = {
    folder.name: _registered(_suite_factory(folder.name), f"{NAMESPACE}/{folder.name}")
    for folder in suite_task_dirs()
}
any_task = _registered(any_task, f"{NAMESPACE}/task")
