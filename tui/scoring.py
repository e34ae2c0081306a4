"""Scoring a run from the TUI, as ``labcoat run`` and ``labcoat score`` do (no Textual here).

The same two calls as the command line: ``ensure_baseline`` (a task without a known baseline
has it measured once, or no run could have an improvement) and ``score_run`` or, for the
per-step curve, ``score_steps``. The app calls this from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

from environments.runs import RunDir
from environments.scoring import (
    Score,
    ensure_baseline,
    load_scores,
    score_run,
    score_steps,
)


def score(run_path: Path, all_steps: bool = False) -> Score:
    """Score the run's last step (``all_steps``: every step, for the curve); the last score."""
    from agent.runner import task_of

    run = RunDir.open(run_path)
    task = task_of(run)
    ensure_baseline(task, sandbox=run.meta.sandbox)
    if all_steps:
        return score_steps(run, task, sandbox=run.meta.sandbox)[-1]
    return score_run(run, task, sandbox=run.meta.sandbox)


def score_line(s: Score) -> str:
    """One line for a person: value, improvement, verdict (the CLI's ``print_score``, plain)."""
    if s.value is None:
        return f"score: failed ({s.failure}) {s.detail[:200]}"
    imp = "n/a" if s.improvement is None else f"{s.improvement:+.1%}"
    verdict = "success" if s.success else "below threshold"
    return f"score: {s.metric} = {s.value:.5g} (baseline {s.baseline:.5g}, {imp}) → {verdict}" \
        if s.baseline is not None else f"score: {s.metric} = {s.value:.5g} → {verdict}"


def curve(run_path: Path) -> list[tuple[int, float]]:
    """(step, improvement) of every scored step (``scores.json``), for the run view's plot."""
    return [(step, s.improvement) for step, s in load_scores(run_path).items()
            if s.improvement is not None]
