"""The hindsight benchmark: the offline LP over the realised arrivals, solved by HiGHS.

A full HiGHS solve costs seconds at T = 128k (and much more on a loaded machine), and the task,
the benchmark and the slow tests solve dozens of them. :func:`solve_offline` therefore screens:
a price estimated on a prefix fixes every customer whose reduced cost is far from zero, HiGHS
solves the LP over the remaining ones, and the result is accepted only if the KKT conditions hold
for *every* customer under the reduced LP's dual (otherwise the margin doubles and it retries).
When they hold, the combined primal/dual pair is optimal for the full LP, so the answer is exact,
not an approximation; ``screen=False`` solves the full LP directly (the tests compare the two).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from methods.online_lp.instances import Instance

PREFIX = 8000
"""Arrivals used to estimate the screening price."""


@dataclass(frozen=True)
class OfflineSolution:
    """``opt`` = R*_T, ``ystar`` = the optimal price of each resource (the LP dual)."""

    opt: float
    ystar: np.ndarray


def _highs(c: np.ndarray, a: np.ndarray, budget: np.ndarray) -> OfflineSolution | None:
    """max cᵀx s.t. aᵀx ≤ budget, 0 ≤ x ≤ 1; None if infeasible. Dual price = −marginals."""
    if c.size == 0:
        return OfflineSolution(0.0, np.zeros(a.shape[1])) if np.all(budget >= 0) else None
    res = linprog(-c, A_ub=a.T, b_ub=budget, bounds=(0.0, 1.0), method="highs")
    if res.status == 2:
        return None
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed: {res.message}")
    ystar = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
    return OfflineSolution(opt=float(-res.fun), ystar=ystar)


def solve_offline(inst: Instance, screen: bool = True) -> OfflineSolution:
    """R*_T and y*_LP for ``inst`` (exact either way; ``screen`` only changes the cost)."""
    budget = inst.T * inst.d
    if not screen or inst.T < 1.5 * PREFIX:
        sol = _highs(inst.c, inst.a, budget)
        if sol is None:  # pragma: no cover - x = 0 is always feasible for d ≥ 0
            raise RuntimeError(f"offline LP infeasible on seed {inst.seed}")
        return sol
    guess = _highs(inst.c[:PREFIX], inst.a[:PREFIX], PREFIX * inst.d)
    assert guess is not None
    margin = inst.c - inst.a @ guess.ystar
    delta = 0.05 * float(np.abs(inst.c).max())
    while True:
        ambiguous = np.abs(margin) <= delta
        accept = margin > delta
        reduced = _highs(
            inst.c[ambiguous], inst.a[ambiguous], budget - inst.a[accept].sum(axis=0)
        )
        if reduced is not None:
            fixed = ~ambiguous
            reduced_cost = inst.c[fixed] - inst.a[fixed] @ reduced.ystar
            # KKT for the fixed customers: accepted ones must not lose money at the dual price,
            # rejected ones must not be profitable. Then the pair is optimal for the full LP.
            if np.all(reduced_cost[accept[fixed]] >= 0) and np.all(reduced_cost[~accept[fixed]] <= 0):
                return OfflineSolution(
                    opt=float(inst.c[accept].sum()) + reduced.opt, ystar=reduced.ystar
                )
        if ambiguous.all():  # pragma: no cover - the full LP was just solved
            raise RuntimeError(f"offline LP failed on seed {inst.seed}")
        delta *= 2.0


def dual_value(inst: Instance, y: np.ndarray) -> float:
    """T dᵀy + Σ_t (c_t − a_tᵀy)⁺: an upper bound on R*_T for every y ≥ 0, tight at y*."""
    return float(inst.T * inst.d @ y + np.maximum(inst.c - inst.a @ y, 0.0).sum())
