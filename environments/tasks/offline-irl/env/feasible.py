"""Classify candidate rewards against the feasible reward set, from offline data only.

``classify(inst)`` returns two bool arrays of length K (one entry per candidate reward):

* ``in_subset``   -- rewards you certify to lie in R^∩ (feasible for EVERY transition kernel that
  agrees with the true one where the behaviour policy has data). A single reward you put here
  that is not in R^∩ scores the whole submission 0.
* ``in_superset`` -- rewards that MAY be feasible (a superset of R^∪). A single reward of R^∪
  you leave out scores 0.

The score is the mean recall of ``in_subset`` (how much of R^∩ you certify).

This baseline is PIRLO (pessimistic offline IRL): Hoeffding confidence bonuses with a union
bound over the K tested rewards, and a "cross" comparison of an optimistic against a
pessimistic Q-function.
"""

from __future__ import annotations

import numpy as np

TOL = 1e-9


def empirical_model(D_E, D_b, S, A, H):
    """Pooled counts N_h(s,a), p̂_h(s'|s,a), the expert's states and actions seen in D_E."""
    counts = np.zeros((H, S, A, S))
    for D in (D_E, D_b):
        for h in range(H):
            np.add.at(counts[h], (D[:, h, 0], D[:, h, 1], D[:, h, 2]), 1.0)
    N = counts.sum(axis=3)
    P_hat = counts / np.maximum(N, 1.0)[..., None]
    expert_states = np.zeros((H, S), dtype=bool)
    expert_action = np.zeros((H, S), dtype=np.int64)
    for h in range(H):
        expert_states[h, D_E[:, h, 0]] = True
        expert_action[h, D_E[:, h, 0]] = D_E[:, h, 1]
    return N, P_hat, expert_states, expert_action


def pessimistic_q(R, P_hat, N, bonus, optimistic):
    """Optimal Q (K,H,S,A) with p̂·V ± bonus·range(V) on seen triples, max/min V elsewhere."""
    K, H, S, A = R.shape
    Q = np.zeros_like(R)
    V = np.zeros((K, S))
    for h in reversed(range(H)):
        vmax, vmin = V.max(axis=1)[:, None, None], V.min(axis=1)[:, None, None]
        mean = np.einsum("sat,kt->ksa", P_hat[h], V)
        width = bonus[h][None] * (vmax - vmin)
        if optimistic:
            seen, unseen = np.minimum(mean + width, vmax), vmax
        else:
            seen, unseen = np.maximum(mean - width, vmin), vmin
        Q[:, h] = R[:, h] + np.where(N[h][None] > 0, seen, unseen)
        V = Q[:, h].max(axis=2)
    return Q


def expert_is_best(Q_other, Q_expert, expert_states, expert_action):
    """For each reward: Q_other(s,a) <= Q_expert(s, expert action) at every seen expert state."""
    K, H, S, A = Q_other.shape
    q_exp = np.take_along_axis(Q_expert, expert_action[None, :, :, None], axis=3)
    ok = Q_other <= q_exp + TOL
    skip = (~expert_states)[..., None] | (np.arange(A) == expert_action[..., None])
    return np.all(ok | skip[None], axis=(1, 2, 3))


def classify(inst):
    R, S, A, H = inst["R"], int(inst["S"]), int(inst["A"]), int(inst["H"])
    K, delta = R.shape[0], float(inst["delta"])
    N, P_hat, expert_states, expert_action = empirical_model(inst["D_E"], inst["D_b"], S, A, H)
    bonus = np.sqrt(np.log(2 * H * S * A * K / delta) / (2 * np.maximum(N, 1.0)))
    Q_plus = pessimistic_q(R, P_hat, N, bonus, optimistic=True)
    Q_minus = pessimistic_q(R, P_hat, N, bonus, optimistic=False)
    in_subset = expert_is_best(Q_plus, Q_minus, expert_states, expert_action)
    in_superset = expert_is_best(Q_minus, Q_plus, expert_states, expert_action)
    return in_subset, in_superset
