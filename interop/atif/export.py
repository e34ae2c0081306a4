"""A labcoat run folder as an ATIF trajectory (:mod:`interop.atif.models`).

What maps: the research problem is a ``user`` step (after a ``system`` step with the agent's
system prompt, where the call log has one); each trace step is an ``agent`` step whose message is
the model's reply (the action's name where no model spoke: a baseline, a replay, a human), with
the action as one tool call (its arguments an object: a bare string argument is
``{"input": ...}``) and the observation as its result; the model calls logged for that step
(``llm/calls.jsonl``) give the step's tokens, cost and ``llm_call_count``; ``run.json``'s totals
and ``score.json`` give the final metrics.

What does not map, carried in ``extra`` under the key ``labcoat``: a fork's origin (``fork``: the
parent run and step; the inherited prefix's steps are marked ``is_copied_context``, as context
copied from another trajectory) and the runs forked from this one (``forks``); each step's
snapshot id, changed files, exit code, seconds and the actor's own tags (``meta``: a tree run's
node, stage and parent there); the tree's nodes in order (``tree_nodes``); the score
(``final_metrics.extra.labcoat.score``); the run's status and final answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments.record.runs import RunDir, Step
from interop.atif.models import (
    SCHEMA_VERSION,
    Agent,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    ToolCall,
    Trajectory,
)
from interop.atif.models import Step as AtifStep

KEY = "labcoat"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("labcoat")
    except PackageNotFoundError:
        return "0"


def _calls(run: RunDir) -> list[dict[str, Any]]:
    """The run's logged model calls (a torn or foreign line skipped)."""
    path = run.path / "llm" / "calls.jsonl"
    if not path.exists():
        return []
    found = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            call = json.loads(line)
        except ValueError:
            continue
        if isinstance(call, dict):
            found.append(call)
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str)


def _problem(run: RunDir, calls: list[dict[str, Any]]) -> str:
    file = Path(run.meta.task_root) / "scripts" / "research_problem.txt"
    try:
        return file.read_text(errors="replace").strip() or f"Task: {run.meta.task}"
    except OSError:
        pass
    for call in calls:
        for m in call.get("messages") or []:
            if m.get("role") == "user":
                return _text(m.get("content", ""))
    return f"Task: {run.meta.task}"


def _system_prompt(calls: list[dict[str, Any]]) -> str | None:
    for call in calls:
        for m in call.get("messages") or []:
            if m.get("role") == "system":
                return _text(m.get("content", ""))
        return None
    return None


def _metrics(calls: list[dict[str, Any]]) -> Metrics | None:
    if not calls:
        return None
    usage = [c.get("usage") or {} for c in calls]
    return Metrics(
        prompt_tokens=sum(int(u.get("input") or 0) for u in usage),
        completion_tokens=sum(int(u.get("output") or 0) for u in usage),
        cached_tokens=sum(int(u.get("cached") or 0) for u in usage),
        cost_usd=round(sum(float(c.get("cost") or 0.0) for c in calls), 6),
        extra={KEY: {"estimated": any(u.get("estimated") for u in usage),
                     "roles": [c.get("role") for c in calls],
                     "models": sorted({str(c.get("model")) for c in calls}),
                     "errors": [c["error"] for c in calls if c.get("error")],
                     "retries": sum(int(c.get("retries") or 0) for c in calls)}})


def _agent_step(step_id: int, step: Step, calls: list[dict[str, Any]],
                default_model: str | None, logged: bool) -> AtifStep:
    """``logged``: the run has a call log, so a step with no call of its own was taken with no
    model call (``llm_call_count`` 0: a tree node's second action, a restore); without one (a
    baseline, a replay, an imported run) the count is unknown and left out."""
    call_id = f"call_{step.index}"
    args = step.args if isinstance(step.args, dict) else {"input": step.args}
    replies = [c["reply"] for c in calls if c.get("reply")]
    fields = step.meta.get("fields") if isinstance(step.meta.get("fields"), dict) else {}
    thought = fields.get("Thought") if isinstance(fields.get("Thought"), str) else None
    models = [c.get("model") for c in calls if c.get("model")]
    model = models[-1] if models else None
    result_extra = {k: v for k, v in {"error": step.error or None, "exit_code": step.exit_code,
                                      "truncated": step.truncated or None}.items() if v is not None}
    return AtifStep(
        step_id=step_id, timestamp=step.time, source="agent",
        model_name=model if model and model != default_model else None,
        message=replies[-1] if replies else step.action,
        reasoning_content=thought if calls or not logged or step.inherited else None,
        tool_calls=[ToolCall(tool_call_id=call_id, function_name=step.action, arguments=args)],
        observation=Observation(results=[ObservationResult(
            source_call_id=call_id, content=step.observation_full or step.observation,
            extra={KEY: result_extra} if result_extra else None)]),
        metrics=_metrics(calls),
        llm_call_count=len(calls) if logged and not step.inherited else None,
        is_copied_context=True if step.inherited else None,
        extra={KEY: {"index": step.index, "actor": step.actor, "seconds": step.seconds,
                     "snapshot": step.snapshot, "changed": step.changed, "meta": step.meta,
                     "data": step.data, "final_answer": step.is_final_answer or None,
                     "inherited": step.inherited or None}},
    )


def export_run(path: str | Path) -> Trajectory:
    """The run at ``path`` as an ATIF trajectory (validated by the models as it is built)."""
    run = RunDir.open(path, newer_ok=True)
    meta = run.meta
    steps = run.steps(trim=False)
    calls = _calls(run)
    by_step: dict[int, list[dict[str, Any]]] = {}
    for call in calls:
        if isinstance(call.get("step"), int):
            by_step.setdefault(call["step"], []).append(call)

    atif_steps: list[AtifStep] = []
    system = _system_prompt(calls)
    if system is not None:
        atif_steps.append(AtifStep(step_id=1, source="system", message=system,
                                   timestamp=calls[0].get("time")))
    atif_steps.append(AtifStep(step_id=len(atif_steps) + 1, source="user",
                               message=_problem(run, calls), timestamp=meta.created_at))
    for step in steps:
        own = [] if step.inherited else by_step.get(step.index, [])
        atif_steps.append(_agent_step(len(atif_steps) + 1, step, own, meta.model, bool(calls)))

    from environments.scoring.score import load_result

    score = load_result(run.path)
    t = meta.totals
    final = FinalMetrics(
        total_prompt_tokens=t.tokens_in, total_completion_tokens=t.tokens_out,
        total_cached_tokens=t.tokens_cached, total_cost_usd=round(t.cost, 6),
        total_steps=len(atif_steps),
        extra={KEY: {"score": score.model_dump(mode="json") if score else None,
                     "llm_calls": t.llm_calls, "retries": t.retries, "seconds": t.seconds,
                     "actions": t.steps}})
    tree_nodes = [s.meta["tree"] for s in steps if isinstance(s.meta.get("tree"), dict)]
    extra = {"run_id": meta.run_id, "task": meta.task, "task_source": meta.task_source,
             "status": meta.newer_status or meta.status, "status_reason": meta.status_reason,
             "final_answer": meta.final_answer, "actor": meta.actor, "seed": meta.seed,
             "sandbox": meta.sandbox, "budgets": meta.budgets.model_dump(mode="json"),
             "fork": meta.fork.model_dump(mode="json") if meta.fork else None,
             "forks": [f.model_dump(mode="json") for f in run.forks()],
             "tree_nodes": tree_nodes or None, "created_at": meta.created_at,
             "finished_at": meta.finished_at}
    notes = None
    if meta.fork is not None:
        notes = (f"Forked from run {meta.fork.parent} at step {meta.fork.step}: its first "
                 f"{meta.fork.step} actions are the parent's (is_copied_context).")
    return Trajectory(
        schema_version=SCHEMA_VERSION, session_id=meta.run_id, trajectory_id=meta.run_id,
        agent=Agent(name=f"labcoat/{meta.agent}", version=_version(), model_name=meta.model,
                    extra={KEY: {"kind": meta.config.kind, "actor": meta.actor}}),
        steps=atif_steps, notes=notes, final_metrics=final,
        continued_trajectory_ref=None,
        extra={KEY: {k: v for k, v in extra.items() if v is not None}},
    )


def find_runs(path: str | Path) -> list[Path]:
    """``path`` itself when it is a run folder, else the run folders right under it, by name."""
    path = Path(path)
    if (path / "run.json").exists():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such folder")
    return sorted(p for p in path.iterdir() if p.is_dir() and (p / "run.json").exists())


def dumps(trajectory: Trajectory, indent: int | None = 2) -> str:
    return json.dumps(trajectory.to_json_dict(), indent=indent, ensure_ascii=False)


__all__ = ["dumps", "export_run", "find_runs"]
