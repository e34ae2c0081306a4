"""Finite-horizon tabular MDPs, the spec's instance generator and trajectory sampling.

Arrays are indexed step-first: kernels ``P[h, s, a, s']``, policies ``pi[h, s]`` (deterministic)
or ``probs[h, s, a]`` (stochastic), rewards ``r[h, s, a]``; step ``h`` runs 0..H-1 in code for the
paper's 1..H.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

BEHAVIOUR_EXPERT_PROB = 0.6
"""Behaviour plays the expert action with this probability and one fixed other action otherwise."""
DIRICHLET_ALPHA = 0.3


class StepStateActionSized:
    """``H``, ``S`` and ``A`` read off the first three axes of the array named ``SIZED_BY``
    (an MDP's kernel, an estimate's counts): stored nowhere else, they cannot disagree with it."""

    SIZED_BY: ClassVar[str]

    @property
    def H(self) -> int:
        return int(getattr(self, self.SIZED_BY).shape[0])

    @property
    def S(self) -> int:
        return int(getattr(self, self.SIZED_BY).shape[1])

    @property
    def A(self) -> int:
        return int(getattr(self, self.SIZED_BY).shape[2])


@dataclass(frozen=True)
class MDP(StepStateActionSized):
    """A finite-horizon MDP with a deterministic expert and a behaviour policy."""

    SIZED_BY: ClassVar[str] = "P"

    P: np.ndarray  # (H, S, A, S)
    d0: np.ndarray  # (S,)
    pi_E: np.ndarray  # (H, S) int
    pi_b: np.ndarray  # (H, S, A)

    def expert_probs(self) -> np.ndarray:
        return one_hot_policy(self.pi_E, self.A)

    def expert_occupancy(self) -> np.ndarray:
        return state_occupancy(self.P, self.d0, self.expert_probs())

    def expert_states(self) -> np.ndarray:
        """S^E_h as a (H, S) mask: the states the expert reaches with positive probability."""
        return self.expert_occupancy() > 0

    def covered(self) -> np.ndarray:
        """Z as a (H, S, A) mask: triples with positive behaviour occupancy."""
        occ = state_occupancy(self.P, self.d0, self.pi_b)
        return occ[:, :, None] * self.pi_b > 0


def one_hot_policy(pi: np.ndarray, A: int) -> np.ndarray:
    """(H, S) deterministic actions -> (H, S, A) probabilities."""
    return (pi[..., None] == np.arange(A)).astype(float)


def state_occupancy(P: np.ndarray, d0: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """d_h(s) under a stochastic policy; (H, S)."""
    H, S = P.shape[:2]
    occ = np.zeros((H, S))
    occ[0] = d0
    for h in range(H - 1):
        occ[h + 1] = np.einsum("s,sa,sat->t", occ[h], probs[h], P[h])
    return occ


def optimal_policy(P: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Greedy policy for Q* (ties go to the lowest action; they have probability zero here)."""
    H, S, A = r.shape
    pi = np.zeros((H, S), dtype=np.int64)
    V = np.zeros(S)
    for h in reversed(range(H)):
        Q = r[h] + P[h] @ V
        pi[h] = Q.argmax(axis=1)
        V = Q.max(axis=1)
    return pi


def _behaviour_policy(pi_E: np.ndarray, A: int, rng: np.random.Generator) -> np.ndarray:
    H, S = pi_E.shape
    probs = np.zeros((H, S, A))
    if A == 1:
        probs[..., 0] = 1.0
        return probs
    other = rng.integers(0, A - 1, size=(H, S))
    other = other + (other >= pi_E)  # uniform over the A-1 non-expert actions
    h, s = np.indices((H, S))
    probs[h, s, pi_E] = BEHAVIOUR_EXPERT_PROB
    probs[h, s, other] = 1.0 - BEHAVIOUR_EXPERT_PROB
    return probs


def generate_instance(
    S: int = 6, A: int = 3, H: int = 4, seed: int = 0, d_min: float = 0.0, max_draws: int = 100_000
) -> tuple[MDP, np.ndarray]:
    """The spec's generator: returns the MDP and the true reward ``r_true`` (H, S, A).

    With ``d_min > 0`` the MDP is redrawn until the expert's occupancy is at least ``d_min`` at
    every expert-reachable (h, s): the paper's assumption under which D^E shows every such state
    w.h.p. (acceptance is about 8% at 0.03 with the default sizes).
    """
    if S < 1 or A < 1 or H < 1:
        raise ValueError("S, A, H: must be >= 1")
    rng = np.random.default_rng(seed)
    d0 = np.zeros(S)
    d0[: min(2, S)] = 1.0 / min(2, S)
    for _ in range(max_draws):
        P = rng.dirichlet(np.full(S, DIRICHLET_ALPHA), size=(H, S, A))
        r_true = rng.uniform(-1.0, 1.0, size=(H, S, A))
        pi_E = optimal_policy(P, r_true)
        pi_b = _behaviour_policy(pi_E, A, rng)
        mdp = MDP(P=P, d0=d0, pi_E=pi_E, pi_b=pi_b)
        if d_min <= 0:
            return mdp, r_true
        occ = mdp.expert_occupancy()
        if np.all(occ[occ > 0] >= d_min):
            return mdp, r_true
    raise ValueError(f"d_min: no MDP accepted in {max_draws} draws (d_min={d_min} is too high)")


def _categorical(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One draw per row of ``probs`` (n, K) by inverse CDF."""
    cdf = np.cumsum(probs, axis=1)
    u = rng.random(probs.shape[0]) * cdf[:, -1]
    return np.minimum((cdf <= u[:, None]).sum(axis=1), probs.shape[1] - 1)


def sample_episodes(
    mdp: MDP, probs: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """n episodes as an int array (n, H, 3) of (s, a, s') per step."""
    out = np.zeros((n, mdp.H, 3), dtype=np.int64)
    s = _categorical(rng, np.broadcast_to(mdp.d0, (n, mdp.S)))
    for h in range(mdp.H):
        a = _categorical(rng, probs[h, s])
        s_next = _categorical(rng, mdp.P[h, s, a])
        out[:, h] = np.stack([s, a, s_next], axis=1)
        s = s_next
    return out


def sample_datasets(mdp: MDP, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(D^E, D^b): n expert and n behaviour episodes, from a stream keyed by (seed, n)."""
    rng = np.random.default_rng([seed, n, 1])
    D_E = sample_episodes(mdp, mdp.expert_probs(), n, rng)
    D_b = sample_episodes(mdp, mdp.pi_b, n, rng)
    return D_E, D_b
