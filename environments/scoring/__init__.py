"""Scoring, apart from solving: a workspace evaluated in the sandbox with the task's pristine
files (:mod:`.evaluate`; the two-phase contract in :mod:`.submission`, timed tasks paired in
:mod:`.timing`), a run's steps scored (:mod:`.score`, many steps in one kept scratch:
:mod:`.score_scratch` and :mod:`.scratch_sync`), baselines measured and stored
(:mod:`.baselines`) and a task's reference checked against them (:mod:`.reference_check`)."""

from __future__ import annotations

from environments.scoring.baselines import (
    ensure_baseline,
    improvement,
    known_baseline,
    run_solve,
)
from environments.scoring.evaluate import EvalResult, error_summary, evaluate
from environments.scoring.reference_check import check_reference
from environments.scoring.score import (
    FailureReason,
    Score,
    load_scores,
    make_score,
    score_run,
    score_steps,
)

__all__ = [
    "EvalResult",
    "FailureReason",
    "Score",
    "check_reference",
    "ensure_baseline",
    "error_summary",
    "evaluate",
    "improvement",
    "known_baseline",
    "load_scores",
    "make_score",
    "run_solve",
    "score_run",
    "score_steps",
]
