"""The environment side of this task (read-only): random MDPs, Q*, and the learning loop.

The loop lives in the labcoat library (methods.twora_q.plugin.run_estimator) so that
run_dev.py and the scorer run exactly the same code: it draws a uniform-behaviour stream,
picks the table beta uniformly, calls your ``estimator.target`` for y, applies
Q[beta, run, s, a] += step(t) * (y - Q[beta, run, s, a]) with step(t) = N * 0.01 * 1e5 / (t + 1e5)
(capped at 1), and scores ``estimator.estimate(Q)`` against Q* every 10k steps.
"""

from __future__ import annotations

import numpy as np

from methods.twora_q.mdp import RandomMDP, make_random_mdp, q_star
from methods.twora_q.plugin import run_estimator, table_step

DEV_ENV_SEED = 1234
STEPS = 100_000
RUNS = 20
GAMMA = 0.9


def dev_mdp() -> tuple[RandomMDP, np.ndarray]:
    """The development MDP (env_seed 1234) and its Q* (value iteration, residual < 1e-10)."""
    mdp = make_random_mdp(DEV_ENV_SEED, GAMMA)
    return mdp, q_star(mdp)


def evaluate(estimator, env_seeds=(DEV_ENV_SEED,), runs: int = RUNS, steps: int = STEPS, seed: int = 0):
    """Run ``estimator`` on each MDP; returns one result per MDP (.mse, .mse_auc, .bias)."""
    mdps = [make_random_mdp(s, GAMMA) for s in env_seeds]
    return run_estimator(estimator, mdps, [q_star(m) for m in mdps], steps=steps, runs=runs, seed=seed)


__all__ = ["DEV_ENV_SEED", "RUNS", "STEPS", "dev_mdp", "evaluate", "table_step"]
