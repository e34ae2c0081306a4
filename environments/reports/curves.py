"""Curves over runs: improvement against steps, normalized score against seconds and tokens.

Every curve is one computation (:func:`mean_at`): at each x, the mean ± stderr over the runs
that had *reached* x of the value each had there (its latest scored point at or before x: the
workspace it would hand in if stopped at x). A run that ended before x is not carried forward
into the mean; each point says how many runs it averages (``runs``) and how many had ended
before it (``ended``), so a late point averaging one long run reads as such.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from environments.reports.records import RunRecord

Axis = Literal["seconds", "tokens"]
#: a run's points in x order, and how far it went (its last step, second or token)
Series = tuple[list[tuple[float, float]], float]


class CurvePoint(BaseModel):
    """The mean over the runs that reached ``x`` of the value each had there."""

    x: float
    mean: float
    stderr: float = 0.0
    runs: int = Field(description="runs that had reached x: the mean's n")
    ended: int = Field(0, description="runs that had ended before x (not in the mean)")


#: the anytime curves' points (the name their readers know)
AnytimePoint = CurvePoint


def stderr(values: list[float]) -> float | None:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None


def mean_at(series: list[Series]) -> list[CurvePoint]:
    """The curve over ``series`` on the union of their x values (see the module's docstring)."""
    grid = sorted({x for points, _ in series for x, _ in points})
    out = []
    for x in grid:
        values, ended = [], 0
        for points, extent in series:
            known = [v for px, v in points if px <= x]
            if extent < x:
                ended += bool(known)
            elif known:
                values.append(known[-1])
        if values:
            out.append(CurvePoint(x=x, mean=statistics.fmean(values), stderr=stderr(values) or 0.0,
                                  runs=len(values), ended=ended))
    return out


def improvement_curves(runs: list[RunRecord]) -> dict[str, dict[str, list[CurvePoint]]]:
    """task -> row label -> improvement over steps (x: the step), over each row's runs that
    reached the step; a run with no per-step scores is its final score at its last step."""
    groups: dict[tuple[str, str], list[Series]] = {}
    for r in runs:
        curve = dict(r.curve)
        if not curve and r.score is not None and r.score.step is not None:
            curve = {r.score.step: r.improvement}
        points = [(float(s), v) for s, v in sorted(curve.items()) if v is not None]
        if points:
            extent = float(max(r.last_step, *(s for s in curve)))
            groups.setdefault((r.task, r.model), []).append((points, extent))
    out: dict[str, dict[str, list[CurvePoint]]] = {}
    for (task, model), series in sorted(groups.items()):
        out.setdefault(task, {})[model] = mean_at(series)
    return out


def trajectory(values: Mapping[int, float], at: Mapping[int, float]) -> list[tuple[float, float]]:
    """A run's (budget spent, normalized score) points, in step order, from the origin.

    ``values``: step -> normalized score; ``at``: step -> seconds or tokens at that step. Every
    run starts at (0, 0): its workspace is the task's ``env/``, the baseline anchor, unless
    step 0 itself was scored. A scored step whose budget is unknown (no trace time) is skipped.
    The budget never goes back (a resumed run's clock), so a later step is never drawn earlier.
    """
    points = [(0.0, values.get(0, 0.0))]
    for step in sorted(values):
        if step == 0 or step not in at:
            continue
        points.append((max(float(at[step]), points[-1][0]), values[step]))
    return points


def anytime_curve(series: list[Series]) -> list[CurvePoint]:
    """Mean ± stderr of the normalized score the runs still going at budget x had reached."""
    return mean_at(series)


def _tokens_before(cumulative: Mapping[int, int], step: int) -> int:
    """Tokens spent by ``step`` when no call was made for it (an action run without a model
    call): the total of the last step that made one."""
    earlier = [s for s in cumulative if s <= step]
    return cumulative[max(earlier)] if earlier else 0


def anytime_series(r: RunRecord, axis: Axis) -> Series | None:
    """A run's anytime trajectory on ``axis`` and how far along it the run went; None when it
    has no normalized score, or (tokens) spent none."""
    if not r.normalized_curve:
        return None
    at: Mapping[int, float] = r.step_seconds if axis == "seconds" else r.step_tokens
    if axis == "tokens":
        if not any(at.values()):
            return None
        at = {step: at.get(step, _tokens_before(r.step_tokens, step)) for step in r.normalized_curve}
    points = trajectory(r.normalized_curve, at)
    extent = max([points[-1][0], *(float(v) for v in (r.step_seconds if axis == "seconds"
                                                      else r.step_tokens).values())])
    return points, extent


def anytime_curves(runs: list[RunRecord], axis: Axis = "seconds") -> dict[str, dict[str, list[CurvePoint]]]:
    """task -> row label (``human`` for people in the TUI) -> normalized score against
    wall-clock seconds or tokens. Only runs with a normalized score at some step take part;
    against tokens, an actor whose runs spent none (a person, the baseline agent) is left out,
    since every point would sit at 0."""
    groups: dict[tuple[str, str], list[Series]] = {}
    for r in runs:
        if (s := anytime_series(r, axis)) is not None:
            groups.setdefault((r.task, r.model), []).append(s)
    out: dict[str, dict[str, list[CurvePoint]]] = {}
    for (task, model), series in sorted(groups.items()):
        out.setdefault(task, {})[model] = mean_at(series)
    return out


def anytime_json(runs: list[RunRecord]) -> dict[str, dict[str, dict[str, list[dict[str, float]]]]]:
    """task -> actor -> {"seconds": [...], "tokens": [...]} as plain data (``--json``)."""
    out: dict[str, dict[str, dict[str, list[dict[str, float]]]]] = {}
    for axis in ("seconds", "tokens"):
        for task, curves in anytime_curves(runs, axis).items():
            for model, points in curves.items():
                out.setdefault(task, {}).setdefault(model, {"seconds": [], "tokens": []})[axis] = [
                    p.model_dump() for p in points]
    return out
