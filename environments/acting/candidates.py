"""``Score Candidate``: the harness scores a candidate on a private split, with no budget.

Hidden consistent evaluation: a search (the solution tree, the research pool) scores every
candidate on the task's ``search`` split, and picks its final candidate on ``select``. Neither
shows a label, only the metric, so there is no per-run budget as Validate Submission has. The
action is the harness's, never a model's: an actor offers it through ``extra_actions`` (the
ReAct agent does not, so a model cannot name it), and it refuses ``test``, which is read once,
by scoring, after the run. Every call is a step (so a resume, the TUI and ``labcoat verify``
see it) and a line of the run's test-exposure ledger (actor ``harness``; a ``search`` value is
marked shown to the agent, since a search's prompts show it, a ``select`` value is not).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from environments.acting.actions import (
    ActionArgs,
    ActionContext,
    ActionFailed,
    ActionSpec,
)
from environments.acting.observation import Observation
from environments.scoring.hidden import score_split
from sandbox.fs import temporary_folder

SCORE_CANDIDATE = "Score Candidate"


class ScoreCandidateArgs(ActionArgs):
    split: Literal["search", "select"]
    step: int | None = Field(None, ge=0, description="score this step's snapshot (None: the "
                             "workspace as it is now)")
    node: int | None = Field(None, description="the candidate's id in the search, for the ledger")


def _score(ctx: ActionContext, args: ScoreCandidateArgs) -> Observation:
    task = ctx.task
    if args.split not in task.split_names:
        return ctx.observe(f"The task declares no {args.split} split ([splits.{args.split}] in "
                           "task.toml), so a candidate cannot be scored on it.", error=True,
                           data={"split": args.split, "refused": "no such split"})
    purpose = "search" if args.split == "search" else "select"
    with temporary_folder("labcoat-candidate-") as tmp:
        folder = ctx.workspace
        if args.step is not None:
            folder = tmp / "workspace"
            try:
                ctx.restore_step(args.step, folder)
            except ActionFailed as err:
                return ctx.observe(f"Cannot score step {args.step}: {err}", error=True,
                                   data={"split": args.split, "refused": str(err)})
        result = score_split(task, folder, ctx.sandbox_kind, args.split, run_path=ctx.run_folder,
                             actor="harness", purpose=purpose,
                             shown_to_agent=args.split == "search", step=ctx.step_index,
                             node=args.node)
    data = {"split": args.split, "value": result.value, "failure": result.failure,
            "metric": task.metric, "node": args.node, "scored_step": args.step}
    arrow = "higher" if task.higher_is_better else "lower"
    if result.value is not None:
        return ctx.observe(f"{args.split.capitalize()} {task.metric} ({arrow} is better): "
                           f"{result.value:.6g}", seconds=result.seconds, data=data)
    return ctx.observe(f"Scoring on {args.split} failed ({result.failure}): "
                       f"{(result.public_detail or '')[-1500:]}", error=True,
                       seconds=result.seconds, data=data)


SCORE_CANDIDATE_ACTION = ActionSpec(
    SCORE_CANDIDATE,
    "The harness scores a candidate (the workspace, or a step's snapshot) on the task's hidden "
    "search or select split; no budget, only the metric is shown.",
    ScoreCandidateArgs,
    _score,
    kind="harness",
)
