"""Vectorised-over-runs experiments: MSE/bias on the random MDP, % left on the max-bias MDP.

Transitions (and, on the max-bias MDP, exploration and rewards) come from one generator and
the table index beta from another, so on the random MDP every method sees the same stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from methods.twora_q.learners import Learner, RhoSchedule, isotropic_penalty, rho_at, step_sizes
from methods.twora_q.mdp import (
    LEFT,
    MAXBIAS_B_ACTIONS,
    MAXBIAS_B_MEAN,
    RandomMDP,
    q_star,
    sample_trajectories,
)


def streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Independent (environment, beta) generators from one seed."""
    env_ss, beta_ss = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(env_ss), np.random.default_rng(beta_ss)


@dataclass
class RandomResult:
    steps: list[int] = field(default_factory=list)
    mse: list[float] = field(default_factory=list)
    se: list[float] = field(default_factory=list)
    bias: float = 0.0
    q_bar: np.ndarray | None = None  # (runs, S, A) at the end

    @property
    def mse_final(self) -> float:
        return self.mse[-1]

    @property
    def mse_auc(self) -> float:
        """Mean of the logged MSEs: the area under the curve per logged point."""
        return float(np.mean(self.mse))


def squared_errors(q_bar: np.ndarray, qstar: np.ndarray) -> np.ndarray:
    """||Q_bar - Q*||^2 summed over the S x A entries, one value per run."""
    return ((q_bar - qstar[None]) ** 2).sum(axis=(1, 2))


def run_random(
    learner: Learner,
    mdp: RandomMDP,
    *,
    steps: int = 100_000,
    runs: int = 20,
    seed: int = 0,
    alpha0: float = 0.01,
    alpha_weight: int | None = 100_000,
    rho0: float = 0.0,
    rho_schedule: RhoSchedule = "t2",
    rho_weight: float = 10_000,
    log_every: int = 10_000,
    qstar: np.ndarray | None = None,
    transitions: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> RandomResult:
    """Run ``runs`` independent learners along uniform-behaviour trajectories of one MDP.

    ``alpha0`` is the base rate; the learner's ``step_scale`` multiplies it. ``transitions``
    lets callers share one pre-drawn stream between methods (it is what ``seed`` would draw).
    """
    if qstar is None:
        qstar = q_star(mdp)
    env_rng, beta_rng = streams(seed)
    if transitions is None:
        transitions = sample_trajectories(mdp, steps, runs, env_rng)
    s_all, a_all, s2_all = transitions
    n = learner.n_tables
    betas = beta_rng.integers(0, n, size=(steps, runs)) if n > 1 else np.zeros((steps, runs), dtype=np.int64)
    alphas = learner.step_scale * step_sizes(alpha0, alpha_weight, steps)
    penalties = isotropic_penalty(1.0, rho_at(rho0, rho_schedule, rho_weight, np.arange(steps)))
    n_s, n_a = mdp.n_states, mdp.n_actions
    ridx = np.arange(runs)
    # Flat indices for the whole stream, computed once: the loop then does only gathers and
    # scatters, which keeps every method's per-step cost at a handful of numpy calls.
    rewards = mdp.R[s_all, a_all]
    cell = (ridx * n_s + s_all) * n_a + a_all  # (runs, S, A) flat index of (run, s, a)
    table_cell = betas * (runs * n_s * n_a) + cell  # (N, runs, S, A) flat index
    next_row = ridx * n_s + s2_all  # row of (runs * S, A)
    gamma = mdp.gamma
    Q = np.zeros((n, runs, n_s, n_a))
    q_flat, q_rows = Q.reshape(-1), Q.reshape(n, runs * n_s, n_a)
    # A running mean table (exact up to round-off) when the bootstrap needs only the mean.
    track_mean = learner.uses_mean and n > 1
    q_mean = np.zeros((runs, n_s, n_a))
    mean_flat, mean_rows = q_mean.reshape(-1), q_mean.reshape(1, runs * n_s, n_a)
    source = mean_rows if track_mean else q_rows
    inv_n = 1.0 / n
    out = RandomResult()
    for t in range(steps):
        y = rewards[t] + gamma * learner.bootstrap(source[:, next_row[t]], betas[t], penalties[t])
        idx = table_cell[t]
        cur = q_flat[idx]
        inc = alphas[t] * (y - cur)
        q_flat[idx] = cur + inc
        if track_mean:
            c = cell[t]
            mean_flat[c] = mean_flat[c] + inc * inv_n
        if (t + 1) % log_every == 0 or t + 1 == steps:
            err = squared_errors(learner.estimate(Q), qstar)
            out.steps.append(t + 1)
            out.mse.append(float(err.mean()))
            out.se.append(float(err.std(ddof=1) / np.sqrt(runs)) if runs > 1 else 0.0)
    q_bar = learner.estimate(Q)
    out.bias = float((q_bar - qstar[None]).mean())
    out.q_bar = q_bar
    return out


@dataclass
class MaxBiasResult:
    left_pct_curve: list[float]
    bias: float  # mean of Q_bar - Q* over the 12 entries and the runs, at the end

    @property
    def left_pct_first50(self) -> float:
        return float(np.mean(self.left_pct_curve[:50]))

    @property
    def left_pct_last100(self) -> float:
        return float(np.mean(self.left_pct_curve[-100:]))


def epsilon_greedy(q: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Per-row epsilon-greedy with uniformly random tie-breaking; ``q`` is (runs, A)."""
    runs, n_actions = q.shape
    ties = q == q.max(axis=1, keepdims=True)
    greedy = (rng.random((runs, n_actions)) * ties).argmax(axis=1)
    explore = rng.random(runs) < epsilon
    return np.where(explore, rng.integers(0, n_actions, size=runs), greedy)


def run_maxbias(
    learner: Learner,
    *,
    episodes: int = 300,
    runs: int = 2000,
    seed: int = 0,
    alpha0: float = 0.1,
    alpha_weight: int | None = None,
    rho0: float = 0.0,
    rho_schedule: RhoSchedule = "t",
    rho_weight: float = 100,
    gamma: float = 1.0,
    epsilon: float = 0.1,
) -> MaxBiasResult:
    """Sutton & Barto Ex. 6.7: how often epsilon-greedy on Q_bar goes left (optimum eps/2).

    ``t`` in both schedules is each run's own update count; the per-table step is capped at
    1 so that step scaling (N * alpha) never overshoots the target.
    """
    env_rng, beta_rng = streams(seed)
    n = learner.n_tables
    qa = np.zeros((n, runs, 2))
    qb = np.zeros((n, runs, MAXBIAS_B_ACTIONS))
    ridx = np.arange(runs)
    t_run = np.zeros(runs, dtype=np.int64)

    def alpha(t: np.ndarray) -> np.ndarray:
        base = alpha0 if alpha_weight is None else alpha0 * alpha_weight / (t + alpha_weight)
        return np.minimum(learner.step_scale * base, 1.0)

    left_pct = []
    for _ in range(episodes):
        act_a = epsilon_greedy(learner.estimate(qa), epsilon, env_rng)
        left = act_a == LEFT
        left_pct.append(100.0 * left.mean())
        # Update at A. Going right ends the episode with reward 0; going left bootstraps from B.
        beta = beta_rng.integers(0, n, size=runs)
        penalty = isotropic_penalty(1.0, rho_at(rho0, rho_schedule, rho_weight, t_run))
        y = np.where(left, gamma * learner.bootstrap(qb, beta, penalty), 0.0)
        cur = qa[beta, ridx, act_a]
        qa[beta, ridx, act_a] = cur + alpha(t_run) * (y - cur)
        t_run += 1
        # The runs that went left take one more (terminal) step from B.
        act_b = epsilon_greedy(learner.estimate(qb), epsilon, env_rng)
        reward = env_rng.normal(MAXBIAS_B_MEAN, 1.0, size=runs)
        beta = beta_rng.integers(0, n, size=runs)
        li = ridx[left]
        cur = qb[beta[li], li, act_b[li]]
        qb[beta[li], li, act_b[li]] = cur + alpha(t_run[li]) * (reward[li] - cur)
        t_run[li] += 1
    q_a_true = np.array([gamma * MAXBIAS_B_MEAN, 0.0])
    err = np.concatenate(
        [learner.estimate(qa) - q_a_true, learner.estimate(qb) - MAXBIAS_B_MEAN], axis=1
    )
    return MaxBiasResult(left_pct_curve=left_pct, bias=float(err.mean()))
