"""Scoring a run from the TUI, as ``labcoat run`` and ``labcoat score`` do (no Textual here).

The same call as the command line: :func:`agent.session.score` (the task's baseline measured
once when none is known, then the last step or, for the per-step curve, every step). The app
calls this from a worker thread.
"""

from __future__ import annotations

from pathlib import Path

from environments.scoring.score import Score, load_scores
from environments.untrusted.words import failure_text, gain, metric


def score(run_path: Path, all_steps: bool = False) -> Score:
    """Score the run's last step (``all_steps``: every step, for the curve); the last score."""
    from agent import session

    return session.score(run_path, every_step=all_steps)[-1]


def score_line(s: Score) -> str:
    """One line for a person: value, improvement, verdict (the CLI's ``print_score``, plain)."""
    if s.value is None:
        if s.failure == "infrastructure":
            return f"score: not scored (infrastructure failure): {failure_text(s.detail, 200)}"
        return f"score: failed ({s.failure}) {failure_text(s.detail, 200)}"
    verdict = "success" if s.success else "below threshold"
    if s.baseline is None:
        return f"score: {s.metric} = {metric(s.value)} → {verdict}"
    line = f"score: {s.metric} = {metric(s.value)} (baseline {metric(s.baseline)}, {gain(s.improvement)}) → {verdict}"
    if s.baseline_why.startswith("the mean of"):  # a few percent off 0% may be noise: say so here
        line += f"; baseline: {s.baseline_why}"
    return line


def curve(run_path: Path) -> list[tuple[int, float]]:
    """(step, improvement) of every scored step (``scores.json``), for the run view's plot."""
    return [(step, s.improvement) for step, s in load_scores(run_path).items()
            if s.improvement is not None]
