"""Runtime scores that measure the submission, not the machine's load.

A runtime measured once and compared with a baseline measured at another time mostly measures
the load. So a ``timed`` task's scoring runs the submission (A) and the pristine ``env/`` (B)
alternately in the same call (A B, B A, A B, ...), each a fresh submission-phase exec timed by the host,
and works on the paired log-ratios ``d_i = ln(t_A,i / t_B,i)``: a load change hits both members
of a pair, so it cancels in ``d_i``. The estimate is a Student t-interval (95%, two-sided) on the
mean of ``d``; pairs are added until its half-width is below ``TARGET_HALF_WIDTH`` (after at
least ``MIN_PAIRS``), or the interval lies wholly on one side of the success threshold (more
pairs could not change the verdict), or ``MAX_PAIRS`` / the time budget is reached. Success needs the *whole*
interval beyond the threshold: the pessimistic end of the improvement must reach it, so a no-op
(whose interval straddles 0) is never a success however the load moved.
"""

from __future__ import annotations

import functools
import math
import statistics

from pydantic import BaseModel

MIN_PAIRS, MAX_PAIRS = 3, 5
TARGET_HALF_WIDTH = 0.05  # on ln(ratio): about ±5% on the speed ratio


@functools.cache
def t975(df: int) -> float:
    """The two-sided 95% Student t quantile at ``df`` degrees of freedom, exact at every df (a
    table that fell back to 1.96 past 20 made 22-60 pair intervals 4-6% too narrow). scipy is
    imported here, not at the top: the workbench starts without loading it."""
    from scipy.stats import t

    return float(t.ppf(0.975, df))


class Paired(BaseModel):
    """The paired comparison of one scoring: times in seconds, improvement and its interval."""

    submission_seconds: list[float]
    pristine_seconds: list[float]
    mean_log_ratio: float
    half_width: float
    improvement: float
    improvement_low: float
    improvement_high: float


def half_width(d: list[float]) -> float:
    if len(d) < 2:
        return math.inf
    return t975(len(d) - 1) * statistics.stdev(d) / math.sqrt(len(d))


def gain_from_log_ratio(m: float, higher_is_better: bool) -> float:
    """Relative improvement (MLAgentBench's) when the submission takes ``exp(m)`` times as long:
    a runtime (lower) gains ``1 - exp(m)``, a throughput (higher) gains ``exp(-m) - 1``."""
    return math.exp(-m) - 1 if higher_is_better else 1 - math.exp(m)


def compare_times(a: list[float], b: list[float], higher_is_better: bool) -> Paired:
    """Paired timings of ``a`` (the submission) against ``b`` (the pristine workspace's) as
    the gain with its 95% interval, from the mean log ratio (named apart from the report's
    row comparison)."""
    d = [math.log(x / y) for x, y in zip(a, b)]
    m, h = statistics.fmean(d), half_width(d)
    worst, best = gain_from_log_ratio(m + h, higher_is_better), gain_from_log_ratio(m - h, higher_is_better)
    return Paired(submission_seconds=a, pristine_seconds=b, mean_log_ratio=m,
                  half_width=h if math.isfinite(h) else 1e9, improvement=gain_from_log_ratio(m, higher_is_better),
                  improvement_low=min(worst, best), improvement_high=max(worst, best))


def geometric_mean(xs: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in xs))


def settled(p: Paired, threshold: float) -> bool:
    """Enough pairs: the interval is tight, or wholly on one side of the success threshold."""
    n = len(p.submission_seconds)
    if n < MIN_PAIRS:
        return False
    return p.half_width <= TARGET_HALF_WIDTH or p.improvement_low >= threshold or (
        p.improvement_high < threshold)
