"""The Q-learning family as "how to bootstrap from N tables": Q, Double, Maxmin and 2RA.

Every member keeps N tabular estimates, picks one table beta per transition, and moves only
that table towards a target y = r + gamma * bootstrap(Q(s', .)); they differ only in the
bootstrap and in how the step is scaled. Writing them this way makes the identities the spec
asks for (2RA with N = 1, rho = 0 *is* Q-learning) hold bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Method = Literal["q", "double", "2ra", "maxmin"]
DoubleVariant = Literal["van_hasselt", "authors"]
RhoSchedule = Literal["t2", "t", "const"]


def isotropic_penalty(phi_norm: np.ndarray | float, rho_t: np.ndarray | float) -> np.ndarray:
    """Worst case of -phi^T d over the l2 ball ||d|| <= sqrt(rho): -sqrt(rho) * ||phi||.

    This is the closed form the authors' code uses. Whether the paper's ambiguity set is
    covariance-shaped is unchecked (spec, open question); a second form would be another
    function with this signature. Tabular features are one-hot, so ``phi_norm`` is 1 there.
    """
    return np.sqrt(rho_t) * phi_norm


@dataclass(frozen=True)
class Learner:
    """One member of the family; ``bootstrap`` maps next-state tables to max-like values."""

    method: Method
    n_tables: int
    step_scale: float
    double_variant: DoubleVariant = "van_hasselt"

    @property
    def uses_mean(self) -> bool:
        """2RA bootstraps from the mean table only, so a runner may pass just that, (1, runs, A).

        Keeping the mean up to date incrementally costs one scatter per step instead of a
        gather over all N tables, which is what keeps 2RA's cost close to Q-learning's.
        """
        return self.method == "2ra"

    def bootstrap(self, q_next: np.ndarray, beta: np.ndarray, penalty: np.ndarray | float) -> np.ndarray:
        """Value of the next state per run; ``q_next`` is (N, runs, A), ``beta`` is (runs,).

        ``penalty`` is the worst-case term ``isotropic_penalty(phi_norm, rho_t)`` (a scalar or
        one value per run); runners compute it for the whole schedule at once, and only 2RA
        uses it. For 2RA, ``q_next`` may be the mean table alone, shape (1, runs, A).
        """
        return _BOOTSTRAPS[self.method](self, q_next, beta, penalty)

    @staticmethod
    def estimate(q: np.ndarray) -> np.ndarray:
        """Act and evaluate with the average of the tables (all members, as in the paper)."""
        return q.mean(axis=0)


_max = np.maximum.reduce  # the ufunc directly: .max() adds a Python-level wrapper per call


def _q(_: Learner, q_next: np.ndarray, beta: np.ndarray, penalty: np.ndarray | float) -> np.ndarray:
    return _max(q_next[0], axis=-1)


def _2ra(_: Learner, q_next: np.ndarray, beta: np.ndarray, penalty: np.ndarray | float) -> np.ndarray:
    # Robust average: the mean table, penalised by the worst case over the ball.
    mean = q_next[0] if q_next.shape[0] == 1 else q_next.mean(axis=0)
    return _max(mean, axis=-1) - penalty


def _maxmin(_: Learner, q_next: np.ndarray, beta: np.ndarray, penalty: np.ndarray | float) -> np.ndarray:
    # Lan et al.'s Maxmin: pessimistic per action over the tables, then greedy. (The 2RA
    # authors' code instead picks the single table with the smallest Q(s, a) and maxes it at s';
    # Maxmin is optional in the spec and untested beyond running.)
    return _max(q_next.min(axis=0), axis=-1)


def _double(learner: Learner, q_next: np.ndarray, beta: np.ndarray, penalty: np.ndarray | float) -> np.ndarray:
    runs = np.arange(q_next.shape[1])
    chooser, evaluator = beta, 1 - beta
    if learner.double_variant == "authors":
        chooser, evaluator = evaluator, chooser
    a_star = q_next[chooser, runs].argmax(axis=-1)
    return q_next[evaluator, runs, a_star]


_BOOTSTRAPS = {"q": _q, "2ra": _2ra, "maxmin": _maxmin, "double": _double}


def make_learner(
    method: Method, n: int = 10, *, scale_step: bool = True, double_variant: DoubleVariant = "van_hasselt"
) -> Learner:
    """Table count and step scale per method.

    Each table is updated only 1/N of the time, so scaling its step by N keeps its effective
    rate equal to Q-learning's (the authors' choice: alpha0 0.01 for Q, 0.1 for 2RA with N = 10).
    """
    if method == "q":
        return Learner("q", 1, 1.0)
    if method == "double":
        return Learner("double", 2, 2.0 if scale_step else 1.0, double_variant)
    if n < 1:
        raise ValueError(f"N: must be >= 1, got {n}")
    if method not in _BOOTSTRAPS:
        raise ValueError(f"method: unknown method {method!r}")
    return Learner(method, n, float(n) if scale_step else 1.0)


def step_sizes(alpha0: float, weight: int | None, steps: int) -> np.ndarray:
    """alpha_t = alpha0 * w / (t + w); constant when w is None."""
    t = np.arange(steps, dtype=float)
    if weight is None:
        return np.full(steps, float(alpha0))
    return alpha0 * weight / (t + weight)


def rho_at(rho0: float, schedule: RhoSchedule, weight: float, t: np.ndarray | int) -> np.ndarray:
    """The ambiguity radius schedule: rho_t -> 0 is what makes 2RA converge to Q*."""
    t = np.asarray(t, dtype=float)
    if schedule == "t2":
        return rho0 * weight / (t**2 + weight)
    if schedule == "t":
        return rho0 * weight / (t + weight)
    if schedule == "const":
        return np.full_like(t, float(rho0))
    raise ValueError(f"rho_schedule: unknown schedule {schedule!r}")
