"""Scoring a run's steps: each step's snapshot evaluated and recorded against the baseline.

A step's workspace is restored from its snapshot into a scratch folder and evaluated in the
sandbox (:func:`environments.scoring.evaluate.evaluate`: pristine task files, the two-phase contract of
``environments/scoring/submission.py``; several steps of a task that is neither timed nor
interactive in one scratch and one sandbox kept in step, :mod:`environments.scoring.score_scratch`); the result becomes a :class:`Score`
against the task's baseline (:mod:`environments.scoring.baselines` decides which). Each step's score
is recorded (``scores.json``, the run's improvement curve). The run's result, ``score.json``,
comes only from its result step scored alone (:func:`score_run` with no step, or ``result``):
never from a point of the curve, whose steps share a scratch and a sandbox (issue 37: a step
leaking into the next one once overwrote the run's result).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from environments.record.runs import RunDir, now
from environments.scoring.baselines import improvement, scored_against
from environments.scoring.evaluate import EvalResult, FailureReason, evaluate
from environments.scoring.hidden import record_call
from environments.scoring.score_scratch import StepScorer
from environments.task.anchors import load_anchors, normalize
from environments.task.mlagentbench import not_comparable
from environments.task.spec import TaskSpec
from environments.untrusted.words import plural
from sandbox.fs import temporary_folder


class Score(BaseModel):
    """``score.json``: one scored snapshot against the task's baseline."""

    task: str
    metric: str
    direction: str
    value: float | None
    baseline: float | None
    # which baseline (environments/scoring/baselines.py's BaselineSource) and why it was the one used
    baseline_source: str | None = None
    baseline_why: str = ""
    improvement: float | None
    success: bool
    threshold: float
    step: int | None = None
    eval_seconds: float = 0.0
    failure: FailureReason | None = None
    detail: str = ""
    # timed tasks: the improvement's 95% interval from the paired comparison in this call
    interval: tuple[float, float] | None = None
    # 0 = the task's baseline anchor, 1 = its reference anchor (anchors.toml, versioned)
    normalized: float | None = None
    # the private split it was read on, and whether after the run (a point of a curve over
    # test: for analysis, never something a search saw; environments/record/ledger.py)
    split: str = "test"
    post_hoc: bool = False
    scored_at: str = Field(default_factory=now)


class Scores(BaseModel):
    """``scores.json``: every step scored so far, in step order."""

    steps: list[Score] = []


def normalized_score(task: TaskSpec, result: EvalResult) -> float | None:
    log_ratio = result.paired.mean_log_ratio if result.paired is not None else None
    try:
        return normalize(load_anchors(task.root), result.value, log_ratio)
    except (OSError, ValueError):
        return None


def make_score(task: TaskSpec, result: EvalResult, step: int | None,
               sandbox: str | None = None) -> Score:
    """The score of one evaluation. A timed task's baseline is the pristine ``env/`` measured in
    the same call, and success needs the pessimistic end of its interval past the threshold."""
    paired = result.paired
    against = scored_against(task, result, sandbox)
    baseline = against.value if against is not None else None
    imp = None
    if paired is not None:
        imp = paired.improvement
    elif result.value is not None and baseline is not None:
        imp = improvement(result.value, baseline, task.higher_is_better)
    detail = result.detail
    if baseline is None and result.value is not None:
        detail = "no baseline known: run `labcoat baseline` for this task"
    worst = paired.improvement_low if paired is not None else imp
    apart = not_comparable(task.mlagentbench)  # MLAgentBench's self-reported runtime
    if apart is not None and result.value is not None:
        worst, detail = None, f"{apart}; {detail}" if detail else apart
    return Score(
        task=task.name, metric=task.metric, direction=task.direction, value=result.value,
        baseline=baseline, improvement=imp,
        baseline_source=against.source if against is not None else None,
        baseline_why=against.why if against is not None else "",
        success=worst is not None and worst >= task.success_threshold,
        threshold=task.success_threshold, step=step, eval_seconds=round(result.seconds, 3),
        failure=result.failure, detail=detail,
        interval=(paired.improvement_low, paired.improvement_high) if paired else None,
        normalized=normalized_score(task, result),
    )


def _no_step(index: int, last: int) -> EvalResult:
    return EvalResult(failure="infrastructure", detail=f"no step {index}: the run has {plural(last, 'step')}")


class _Restored:
    """One private scratch folder that steps are restored into in turn. Only this host code
    writes it (``evaluate`` copies it into a scratch of its own), so step k+1 is laid over
    step k by rewriting the folders that differ (``SnapshotStore.restore``'s ``over``): a
    curve costs its steps, not steps x files."""

    def __init__(self, run: RunDir, folder: Path) -> None:
        self.run, self.folder = run, folder
        self.holds: str | None = None  # the snapshot the folder holds exactly

    def restore(self, index: int) -> None:
        label, over, self.holds = f"{index:05d}", self.holds, None  # unknown if this fails
        self.run.snapshots.restore(label, self.folder, over=over)
        self.holds = label


def _restore_and_evaluate(run: RunDir, task: TaskSpec, index: int, sandbox: str,
                          into: _Restored | None = None,
                          scorer: StepScorer | None = None) -> EvalResult:
    """Step ``index`` restored and evaluated: alone (a fresh scratch and sandbox), or by
    ``scorer``, which keeps one of each across the steps it is given."""
    if into is None:
        with temporary_folder("labcoat-restore-") as tmp:
            return _restore_and_evaluate(run, task, index, sandbox, _Restored(run, tmp), scorer)
    try:
        into.restore(index)
    except Exception as err:  # noqa: BLE001 - a broken snapshot is an infrastructure failure
        return EvalResult(failure="infrastructure", detail=f"cannot restore step {index}: {err}")
    if scorer is not None:
        return scorer.evaluate(into.folder)
    return evaluate(task, into.folder, sandbox)


def score_run(run: RunDir, task: TaskSpec, step: int | None = None, sandbox: str = "auto",
              result: bool = False) -> Score:
    """Score step ``step``'s snapshot (default: the last) alone and record it.

    With no ``step`` the score is the run's result, ``score.json``; so it is with ``result``
    (a tree run cut short is its best node's, ``agent.tree.view.result_step``). A step named
    otherwise (``labcoat score --step N``) is a point of the curve, even the last: it goes to
    ``scores.json`` alone (the improvement curve), as every scored step does. A step the run
    does not have is scored an infrastructure failure and not recorded.
    """
    last = len(run.steps())
    index = last if step is None else step
    if not 0 <= index <= last:
        return make_score(task, _no_step(index, last), index)
    evaluated = _restore_and_evaluate(run, task, index, sandbox)
    final = result or step is None
    record_call(run.path, task, sandbox, "test", evaluated, actor="harness",
                purpose="final" if final else "post hoc", shown_to_agent=False, step=index)
    score = make_score(task, evaluated, index, sandbox).model_copy(update={"post_hoc": not final})
    record_curve(run, [score])
    if final:
        run.write_json("score.json", score.model_dump())
    return score


def pick_steps(n_steps: int, points: int | None = None) -> list[int]:
    """Steps 1..n (0 for a run with no steps), or ``points`` of them evenly spaced, last included."""
    if n_steps <= 0:
        return [0]
    every = list(range(1, n_steps + 1))
    if points is None or points >= n_steps:
        return every
    if points <= 1:
        return [n_steps]
    picked = {round(1 + i * (n_steps - 1) / (points - 1)) for i in range(points)}
    return sorted(picked)


def _manifest_key(run: RunDir, index: int) -> str | None:
    try:
        return run.snapshots.load(f"{index:05d}").key()  # the root's content hash: O(1)
    except Exception:  # noqa: BLE001 - scored (and failed) individually below
        return None


def _evaluate_step(run: RunDir, task: TaskSpec, index: int, sandbox: str,
                   seen: dict[str, EvalResult], into: _Restored,
                   scorer: StepScorer | None = None) -> EvalResult:
    """Step ``index``'s evaluation, reused from ``seen`` when an identical workspace was
    evaluated already (an infrastructure failure is tried again)."""
    key = _manifest_key(run, index)
    if key is not None and key in seen:
        return seen[key]
    result = _restore_and_evaluate(run, task, index, sandbox, into, scorer)
    if key is not None and result.failure != "infrastructure":
        seen[key] = result
    return result


def score_steps(run: RunDir, task: TaskSpec, steps: list[int] | None = None,
                points: int | None = None, sandbox: str = "auto", progress=None,
                known: dict[int, Score] | None = None) -> list[Score]:
    """Score several steps' snapshots (default: every step) so the run's curve exists; a step
    in ``known`` (the run's result, scored alone) is that point as it is, not scored again.

    A step whose workspace is identical to an already scored one (a List Files, an Understand
    File) reuses that evaluation. The steps are restored in turn into one private folder and,
    unless the task is timed or interactive, evaluated in one scratch and one sandbox synced to each step
    (:class:`environments.scoring.score_scratch.StepScorer`): a step costs what changed plus one
    ``lstat`` per file, not a copy of every file and a new sandbox. Writes ``scores.json`` only:
    the run's result (``score.json``) is never a point of the curve (:func:`score_run`).
    """
    last = len(run.steps())
    wanted = steps if steps is not None else pick_steps(last, points)
    known = known or {}
    seen: dict[str, EvalResult] = {}
    scores = []
    with temporary_folder("labcoat-restore-") as tmp, StepScorer(task, sandbox) as scorer:
        into = _Restored(run, tmp)
        for i, index in enumerate(wanted):
            if index in known:
                scores.append(known[index])
            else:
                if not 0 <= index <= last:
                    scores.append(make_score(task, _no_step(index, last), index, sandbox))
                else:
                    result = _evaluate_step(run, task, index, sandbox, seen, into, scorer)
                    record_call(run.path, task, sandbox, "test", result, actor="harness",
                                purpose="post hoc", shown_to_agent=False, step=index)
                    scores.append(make_score(task, result, index, sandbox)
                                  .model_copy(update={"post_hoc": True}))
            if progress:
                progress(i + 1, len(wanted), scores[-1])
    record_curve(run, scores)
    return scores


def load_scores(run_path: Path) -> dict[int, Score]:
    """Every step scored so far (``scores.json``, plus ``score.json``'s step), by step."""
    found: dict[int, Score] = {}
    path = Path(run_path) / "scores.json"
    if path.exists():
        found = {s.step: s for s in Scores.model_validate_json(path.read_bytes()).steps
                 if s.step is not None}
    final = Path(run_path) / "score.json"
    if final.exists():
        s = Score.model_validate_json(final.read_bytes())
        if s.step is not None:
            found.setdefault(s.step, s)
    return dict(sorted(found.items()))


def load_result(run_path: Path) -> Score | None:
    """The run's result (``score.json``), or None where it is missing or unreadable."""
    try:
        return Score.model_validate_json((Path(run_path) / "score.json").read_bytes())
    except (OSError, ValueError):
        return None


def record_curve(run: RunDir, scores: list[Score]) -> None:
    """``scores`` merged into the curve (``scores.json``); ``score.json`` is not touched."""
    merged = load_scores(run.path)
    merged.update({s.step: s for s in scores if s.step is not None})
    run.write_json("scores.json", Scores(steps=[merged[k] for k in sorted(merged)]).model_dump())
