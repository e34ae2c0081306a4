"""Empirical quantities both estimators use: pooled counts, p̂, Ẑ, Ŝ^E and π̂^E."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from methods.offline_irl.mdp import StepStateActionSized


@dataclass(frozen=True)
class Estimate(StepStateActionSized):
    """What the offline data say about the MDP."""

    SIZED_BY: ClassVar[str] = "counts"

    counts: np.ndarray  # N_h(s, a), (H, S, A), pooled over D^E and D^b
    P_hat: np.ndarray  # (H, S, A, S); zero rows where N = 0
    expert_states: np.ndarray  # Ŝ^E_h, (H, S) bool: states seen at step h in D^E
    expert_action: np.ndarray  # π̂^E_h(s), (H, S) int, -1 where the state is unseen

    @property
    def covered(self) -> np.ndarray:
        """Ẑ: triples seen at least once in the pooled data."""
        return self.counts > 0


def _check_episodes(D: np.ndarray, name: str, S: int, A: int, H: int) -> np.ndarray:
    D = np.asarray(D)
    if D.ndim != 3 or D.shape[1] != H or D.shape[2] != 3:
        raise ValueError(f"instance: {name} must have shape (n, H={H}, 3), got {D.shape}")
    if not np.issubdtype(D.dtype, np.integer):
        raise ValueError(f"instance: {name} must hold integer (s, a, s') indices")
    s, a, s2 = D[..., 0], D[..., 1], D[..., 2]
    if D.size and (s.min() < 0 or s2.min() < 0 or a.min() < 0 or max(s.max(), s2.max()) >= S
                   or a.max() >= A):
        raise ValueError(f"instance: {name} holds trajectory indices out of range (S={S}, A={A})")
    return D.astype(np.int64)


def estimate_from_data(D_E: np.ndarray, D_b: np.ndarray, S: int, A: int, H: int) -> Estimate:
    """Pool both datasets for p̂; read Ŝ^E and π̂^E from D^E alone.

    Raises ``ValueError`` if D^E shows two actions at one (h, s): the expert must be
    deterministic (the follow-up's theorems assume it, and so does this reconstruction).
    """
    D_E = _check_episodes(D_E, "D_E", S, A, H)
    D_b = _check_episodes(D_b, "D_b", S, A, H)
    pooled = np.concatenate([D_E, D_b], axis=0)
    trans = np.zeros((H, S, A, S))
    for h in range(H):
        np.add.at(trans[h], (pooled[:, h, 0], pooled[:, h, 1], pooled[:, h, 2]), 1.0)
    counts = trans.sum(axis=3)
    P_hat = np.divide(trans, counts[..., None], out=np.zeros_like(trans),
                      where=counts[..., None] > 0)
    seen = np.zeros((H, S, A), dtype=bool)
    for h in range(H):
        seen[h, D_E[:, h, 0], D_E[:, h, 1]] = True
    n_actions = seen.sum(axis=2)
    if np.any(n_actions > 1):
        h, s = np.argwhere(n_actions > 1)[0]
        raise ValueError(
            f"instance: D_E shows {n_actions[h, s]} different actions at step {h}, state {s}; "
            "the expert must be deterministic"
        )
    expert_states = n_actions == 1
    expert_action = np.where(expert_states, seen.argmax(axis=2), -1)
    return Estimate(counts=counts, P_hat=P_hat, expert_states=expert_states,
                    expert_action=expert_action)
