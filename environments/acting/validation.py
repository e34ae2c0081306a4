"""The ``Validate Submission`` action: score the current workspace on the task's ``search`` split.

The task's declared feedback channel (``task.toml``: ``[feedback] kind = "validation", budget =
N``; the default ``kind = "none"`` offers nothing): the action is registered only then, refused
once the budget is spent, and shows nothing of the hidden ``scripts/``. It scores on the private
``search`` split (``environments/task/splits.py``: ``get_search_score`` / ``search_score`` in
``eval.py``; a folder written before the splits, its ``get_validation_score``), the same
signal the harness gives a search, through :func:`environments.scoring.hidden.score_split`:
a scratch copy of the workspace with the read-only files laid back, eval.py from the pristine
scripts, run in the sandbox, the value read from a nonce-tagged line, and a line in the run's
test-exposure ledger (actor ``agent``). Each call that reached the task's eval uses one unit of
the per-run budget; an infrastructure failure does not. The count is read from the steps taken
(the run's trace), so it survives a resume, and every call and what it returned can be read
back from the trace (:func:`validation_calls`; the run manifest stores the same records).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from environments.acting.actions import ActionArgs, ActionContext, ActionSpec
from environments.acting.observation import Observation
from environments.record.manifest import ValidationCall
from environments.scoring.hidden import score_split

if TYPE_CHECKING:
    from environments.task.spec import TaskSpec

VALIDATE = "Validate Submission"


class ValidateArgs(ActionArgs):
    """No arguments: the current workspace is what gets validated."""


def validation_calls(steps: Iterable[Any]) -> list[ValidationCall]:
    """Every Validate Submission call among ``steps`` (``Step`` objects or their dicts, as
    ``trace.jsonl`` holds them), in order, with what it returned. Pure: a run's manifest and
    reports summarise the test signal a run was exposed to from this alone."""
    calls = []
    for s in steps:
        row = s if isinstance(s, dict) else s.model_dump()
        if row.get("action") != VALIDATE:
            continue
        data = row.get("data") or {}
        calls.append(ValidationCall(
            step=row.get("index", 0), counted=bool(data.get("counted")), value=data.get("value"),
            failure=data.get("failure"), metric=data.get("metric"), left=data.get("left"),
            budget=data.get("budget"), observation=row.get("observation", "")))
    return calls


def validations_used(ctx: ActionContext) -> int:
    """Counted calls so far in this run or session (read from the steps it has taken)."""
    return sum(1 for c in validation_calls(ctx.steps()) if c.counted)


def redact(task: TaskSpec, text: str) -> str:
    """``text`` with every line that quotes a file of the hidden ``scripts/`` removed.

    The actor only ever gets the submission phase's own output (never the trusted phase's,
    which runs the task's eval.py), and the submission phase cannot read ``scripts/``; this
    is the second lock: a line carrying 8+ characters of a hidden text file is dropped.
    """
    hidden = []
    for path in task.scripts_dir.rglob("*"):
        if path.is_file() and path.stat().st_size < (1 << 20):
            hidden += [w for w in path.read_text(errors="ignore").split() if len(w) >= 8]
    kept = [line for line in text.splitlines() if not any(w in line for w in hidden)]
    return "\n".join(kept)


def _validate(ctx: ActionContext, args: ValidateArgs) -> Observation:
    task = ctx.task
    budget = task.validation_budget
    used = validations_used(ctx)
    if used >= budget:
        return ctx.observe(f"No validation budget left: all {budget} validations of this run are "
                           "used. Submit with Final Answer when ready.", error=True,
                           data={"counted": False, "left": 0, "budget": budget,
                                 "refused": "budget spent"})
    result = score_split(task, ctx.workspace, ctx.sandbox_kind, "search", run_path=ctx.run_folder,
                         actor="agent", purpose="validate", shown_to_agent=True,
                         step=ctx.step_index)
    counted = result.failure != "infrastructure"
    left = budget - used - (1 if counted else 0)
    data = {"counted": counted, "left": left, "budget": budget, "value": result.value,
            "failure": result.failure, "metric": task.metric, "split": "search"}
    arrow = "higher" if task.higher_is_better else "lower"
    if result.value is not None:
        text = (f"Validation {task.metric} ({arrow} is better): {result.value:.6g}\n"
                f"Validation budget left: {left} of {budget}.")
        return ctx.observe(text, seconds=result.seconds, data=data)
    note = "" if counted else " (an infrastructure error; this call was not counted)"
    shown = redact(task, result.public_detail or "")[-1500:]
    text = (f"Validation failed ({result.failure}){note}: {shown}\n"
            f"Validation budget left: {left} of {budget}.")
    return ctx.observe(text, error=True, seconds=result.seconds, data=data)


def validate_action() -> ActionSpec:
    """The Validate Submission action."""
    return ActionSpec(
        VALIDATE,
        "Score the current workspace on a held-out split you cannot read (the task's own "
        "evaluation, run on a clean copy). Each call uses one unit of this run's validation "
        "budget; the observation says how many are left.",
        ValidateArgs,
        _validate,
    )


def validation_actions(task: TaskSpec) -> list[ActionSpec]:
    """``[Validate Submission]`` when the task declares a validation channel, else nothing."""
    return [validate_action()] if task.validation_budget > 0 else []
