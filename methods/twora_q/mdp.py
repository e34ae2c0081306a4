"""The two test MDPs of the 2RA paper's tabular experiments, and exact Q* for the random one.

Kept apart from the learners so a task's evaluation can generate held-out MDPs with the same
code the tool uses, while the learners stay agnostic of where transitions come from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

N_STATES = 10
N_ACTIONS = 3
DIRICHLET_CONC = 0.1


@dataclass(frozen=True)
class RandomMDP:
    """A finite MDP with a known model; ``P[a, s]`` is the next-state distribution."""

    P: np.ndarray  # (A, S, S)
    R: np.ndarray  # (S, A)
    gamma: float
    env_seed: int

    @property
    def n_states(self) -> int:
        return self.R.shape[0]

    @property
    def n_actions(self) -> int:
        return self.R.shape[1]


def make_random_mdp(env_seed: int = 1234, gamma: float = 0.9) -> RandomMDP:
    """The authors' random MDP: Dirichlet(0.1) transitions, r(s,a) = -0.01 s^2 - 0.1 a^2.

    The transition draw order ``dirichlet(., (A, S))`` matches the authors' code, so an
    ``env_seed`` names the same MDP there and here.
    """
    P = np.random.default_rng(env_seed).dirichlet(
        np.full(N_STATES, DIRICHLET_CONC), (N_ACTIONS, N_STATES)
    )
    s = np.arange(N_STATES)[:, None]
    a = np.arange(N_ACTIONS)[None, :]
    R = -0.01 * s.astype(float) ** 2 - 0.1 * a.astype(float) ** 2
    return RandomMDP(P=P, R=R, gamma=gamma, env_seed=env_seed)


def bellman_backup(mdp: RandomMDP, Q: np.ndarray) -> np.ndarray:
    """T Q (s, a) = r(s, a) + gamma * sum_s' P(s' | s, a) max_a' Q(s', a')."""
    v = Q.max(axis=1)
    return mdp.R + mdp.gamma * np.einsum("ast,t->sa", mdp.P, v)


def q_star(mdp: RandomMDP, sweeps: int = 2000) -> np.ndarray:
    """Q* by value iteration; 2000 sweeps at gamma = 0.9 leave a residual far below 1e-10."""
    Q = np.zeros_like(mdp.R)
    for _ in range(sweeps):
        Q = bellman_backup(mdp, Q)
    return Q


def sample_trajectories(
    mdp: RandomMDP | Sequence[RandomMDP], steps: int, runs: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One uniform-behaviour trajectory per run: (s, a, s') arrays of shape (steps, runs).

    The behaviour policy ignores Q, so the whole stream can be drawn up front; every learner
    then sees exactly the same transitions for a given seed. States start uniformly and never
    reset (the prototype's protocol; the authors reset every 10k samples). Given several MDPs,
    ``runs`` runs of each are stacked along the runs axis and drawn in one loop.
    """
    mdps = [mdp] if isinstance(mdp, RandomMDP) else list(mdp)
    cum = np.cumsum(np.stack([m.P for m in mdps]), axis=3)  # (M, A, S, S)
    cum[..., -1] = 1.0  # guard against round-off leaving the last bucket unreachable
    total = runs * len(mdps)
    which = np.repeat(np.arange(len(mdps)), runs)
    n_states, n_actions = mdps[0].n_states, mdps[0].n_actions
    actions = rng.integers(0, n_actions, size=(steps, total), dtype=np.int64)
    u = rng.random(size=(steps, total))
    s = np.empty((steps, total), dtype=np.int64)
    s2 = np.empty((steps, total), dtype=np.int64)
    cur = rng.integers(0, n_states, size=total)
    for t in range(steps):
        rows = cum[which, actions[t], cur]  # (runs, S)
        nxt = (rows < u[t][:, None]).sum(axis=1)
        s[t] = cur
        s2[t] = nxt
        cur = nxt
    return s, actions, s2


# --- Sutton & Barto's maximisation-bias MDP (Example 6.7) -----------------------------------

MAXBIAS_B_ACTIONS = 10
MAXBIAS_B_MEAN = -0.1
LEFT, RIGHT = 0, 1
"""Actions at state A: LEFT leads to B (reward 0); RIGHT ends the episode (reward 0)."""
