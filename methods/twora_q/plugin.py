"""Run a user-written member of the Q-learning family: the engine behind the ``q-bias`` task.

The caller supplies only ``N``, ``target`` and ``estimate`` (an "estimator" module); this
runner owns everything else: the MDPs, the transition stream, the table choice beta and the
step size. Owning the step size matters: at the spec's alpha0 = 0.01 the MSE of Q-learning is
dominated by slow learning, and a larger step alone would cut it 100-fold, which would turn a
study of estimation bias into step-size tuning. Each table therefore gets N * alpha_t (its
update share is 1/N under uniform beta), the "comparable effective rate" the paper compares at.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from methods.twora_q.experiment import RandomResult, squared_errors, streams
from methods.twora_q.mdp import RandomMDP, sample_trajectories

MAX_TABLES = 20
BASE_ALPHA0 = 0.01
BASE_ALPHA_WEIGHT = 100_000


class Estimator(Protocol):
    N: int

    def target(self, Q: np.ndarray, r: np.ndarray, s2: np.ndarray, t: int, gamma: float,
               beta: np.ndarray) -> np.ndarray: ...

    def estimate(self, Q: np.ndarray) -> np.ndarray: ...


def table_step(t: np.ndarray, n: int) -> np.ndarray:
    """Per-table step: N times the Q-learning schedule alpha_t = 0.01 * w / (t + w), capped at 1."""
    return np.minimum(n * BASE_ALPHA0 * BASE_ALPHA_WEIGHT / (t + BASE_ALPHA_WEIGHT), 1.0)


def _n_tables(est: Any) -> int:
    n = getattr(est, "N", None)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or not 1 <= n <= MAX_TABLES:
        raise ValueError(f"N: must be an int in 1..{MAX_TABLES}, got {n!r}")
    return int(n)


def run_estimator(
    est: Any,
    mdps: Sequence[RandomMDP],
    qstars: Sequence[np.ndarray],
    *,
    steps: int = 100_000,
    runs: int = 20,
    seed: int = 0,
    log_every: int = 10_000,
) -> list[RandomResult]:
    """One :class:`RandomResult` per MDP; the MDPs' runs are stacked along the runs axis.

    ``est.target(Q, r, s2, t, gamma, beta)`` returns y per run, where Q is a read-only
    (N, runs, S, A) view; ``est.estimate(Q)`` returns (runs, S, A). Raises ValueError (naming
    the function) when either returns the wrong shape or a non-finite value.
    """
    n = _n_tables(est)
    env_rng, beta_rng = streams(seed)
    s_all, a_all, s2_all = sample_trajectories(mdps, steps, runs, env_rng)
    total = runs * len(mdps)
    gamma = mdps[0].gamma
    n_s, n_a = mdps[0].n_states, mdps[0].n_actions
    which = np.repeat(np.arange(len(mdps)), runs)
    rewards = np.stack([m.R for m in mdps])[which, s_all, a_all]
    betas = beta_rng.integers(0, n, size=(steps, total))
    alphas = table_step(np.arange(steps, dtype=float), n)
    ridx = np.arange(total)
    cell = betas * (total * n_s * n_a) + (ridx * n_s + s_all) * n_a + a_all
    Q = np.zeros((n, total, n_s, n_a))
    q_flat = Q.reshape(-1)
    view = Q.view()
    view.flags.writeable = False
    results = [RandomResult() for _ in mdps]
    for t in range(steps):
        y = np.asarray(est.target(view, rewards[t], s2_all[t], t, gamma, betas[t]), dtype=float)
        if y.shape != (total,) or not np.isfinite(y).all():
            raise ValueError(f"target: must return {total} finite values, got shape {y.shape}")
        idx = cell[t]
        cur = q_flat[idx]
        q_flat[idx] = cur + alphas[t] * (y - cur)
        if (t + 1) % log_every == 0 or t + 1 == steps:
            q_bar = _estimate(est, view, (total, n_s, n_a))
            for i, (res, qs) in enumerate(zip(results, qstars)):
                err = squared_errors(q_bar[i * runs:(i + 1) * runs], qs)
                res.steps.append(t + 1)
                res.mse.append(float(err.mean()))
                res.se.append(float(err.std(ddof=1) / np.sqrt(runs)) if runs > 1 else 0.0)
    q_bar = _estimate(est, view, (total, n_s, n_a))
    for i, (res, qs) in enumerate(zip(results, qstars)):
        res.q_bar = q_bar[i * runs:(i + 1) * runs]
        res.bias = float((res.q_bar - qs[None]).mean())
    return results


def _estimate(est: Any, view: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    q_bar = np.array(est.estimate(view), dtype=float)
    if q_bar.shape != shape or not np.isfinite(q_bar).all():
        raise ValueError(f"estimate: must return a finite array of shape {shape}, got {q_bar.shape}")
    return q_bar
