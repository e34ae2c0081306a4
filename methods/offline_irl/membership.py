"""Membership tests for R^∩ and R^∪, exact and estimated, vectorised over K rewards.

Why one Q-recursion decides each set (derived for the spec, not quoted from the paper): off the
covered triples Z the kernel is free. Sending every uncovered (h, s, a) to the best next state
(``off="max"``) is one kernel that maximises every optimal value at once, while the expert's own
return only uses Z and so never changes. Hence r is feasible for *every* completion iff it is
feasible for the max-completion (R^∩), and for *some* completion iff it is for the
min-completion (R^∪). Feasibility is then the Q-test "the expert action is optimal at every
expert-reachable state".

The estimators replace the unknown kernel on Ẑ by a confidence set around p̂. Each backup is
monotone in V, so taking the worst case over the set at every step bounds the quantity the exact
test compares, for every kernel in the set (the soundness argument of the spec's ``tight`` test).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from methods.offline_irl.estimate import Estimate

TOL = 1e-9
OnCovered = Literal["plug", "upper", "lower"]
OffCovered = Literal["max", "min"]
Bonus = Literal["hoeffding", "l1"]
Test = Literal["cross", "tight"]


# --------------------------------------------------------------------------- backups on Ẑ


def _plug(V: np.ndarray, P: np.ndarray) -> np.ndarray:
    """p·V for every (s, a) and reward: V (K, S'), P (S, A, S') -> (K, S, A)."""
    return np.einsum("sat,kt->ksa", P, V)


def _hoeffding_upper(V: np.ndarray, P: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """min(p̂·V + b·rng(V), max V): the bonus scales with V's range so it is shift-invariant."""
    vmax, vmin = V.max(axis=1), V.min(axis=1)
    up = _plug(V, P) + radius[None] * (vmax - vmin)[:, None, None]
    return np.minimum(up, vmax[:, None, None])


def _l1_upper(V: np.ndarray, P: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """max of q·V over {q in the simplex : ||q - p̂||_1 <= radius}, exactly.

    The maximiser moves eps = min(radius/2, 1 - q_top) of mass onto the highest-value next state,
    taking it from the lowest-value states first. Vectorised by sorting each reward's V once.
    """
    order = np.argsort(V, axis=1, kind="stable")  # (K, S') ascending
    V_sorted = np.take_along_axis(V, order, axis=1)
    P_sorted = np.moveaxis(P[:, :, order], 2, 0)  # (K, S, A, S')
    eps = np.minimum(radius[None] / 2.0, 1.0 - P_sorted[..., -1])
    before = np.cumsum(P_sorted, axis=-1) - P_sorted
    removed = np.clip(eps[..., None] - before, 0.0, P_sorted)
    removed[..., -1] = 0.0
    shifted = np.einsum("ksat,kt->ksa", P_sorted - removed, V_sorted)
    return shifted + eps * V_sorted[:, -1][:, None, None]


def _backup(
    V: np.ndarray, P: np.ndarray, radius: np.ndarray, on: OnCovered, bonus: Bonus
) -> np.ndarray:
    if on == "plug":
        return _plug(V, P)
    upper = _hoeffding_upper if bonus == "hoeffding" else _l1_upper
    if on == "upper":
        return upper(V, P, radius)
    return -upper(-V, P, radius)  # the worst case for a min is the max of -V


def q_recursion(
    R: np.ndarray,
    P: np.ndarray,
    covered: np.ndarray,
    on: OnCovered = "plug",
    off: OffCovered = "max",
    radius: np.ndarray | None = None,
    bonus: Bonus = "hoeffding",
) -> np.ndarray:
    """Optimal Q (K, H, S, A) with ``on`` backups on covered triples and ``off`` elsewhere.

    ``off="max"`` backs up max_{s'} V_{h+1}(s') (the max-completion), ``"min"`` the min.
    """
    K, H, S, A = R.shape
    if radius is None:
        radius = np.zeros((H, S, A))
    Q = np.empty_like(R, dtype=float)
    V = np.zeros((K, S))
    for h in reversed(range(H)):
        on_val = _backup(V, P[h], radius[h], on, bonus)
        off_val = (V.max(axis=1) if off == "max" else V.min(axis=1))[:, None, None]
        Q[:, h] = R[:, h] + np.where(covered[h][None], on_val, off_val)
        V = Q[:, h].max(axis=2)
    return Q


def optimality_test(
    Q_alt: np.ndarray, Q_exp: np.ndarray, states: np.ndarray, actions: np.ndarray
) -> np.ndarray:
    """(K,) bool: Q_alt(h,s,a) <= Q_exp(h,s,π(s)) + TOL for all s in ``states``, a != π(s)."""
    idx = np.where(actions >= 0, actions, 0)
    q_exp = np.take_along_axis(Q_exp, idx[None, :, :, None], axis=3)  # (K, H, S, 1)
    ok = Q_alt <= q_exp + TOL
    A = Q_alt.shape[3]
    exempt = (~states)[..., None] | (np.arange(A) == actions[..., None])  # (H, S, A)
    return np.all(ok | exempt[None], axis=(1, 2, 3))


# --------------------------------------------------------------------------- exact tests


def exact_membership(
    R: np.ndarray,
    P: np.ndarray,
    covered: np.ndarray,
    expert_states: np.ndarray,
    pi_E: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(in R^∩, in R^∪), each (K,) bool, from the true kernel, Z and S^E."""
    Q_max = q_recursion(R, P, covered, "plug", "max")
    Q_min = q_recursion(R, P, covered, "plug", "min")
    return (optimality_test(Q_max, Q_max, expert_states, pi_E),
            optimality_test(Q_min, Q_min, expert_states, pi_E))


def _expert_values(R: np.ndarray, P: np.ndarray, pi_E: np.ndarray) -> np.ndarray:
    """V^{π^E}_1 (K, S) by policy evaluation; at reachable states it only reads P on Z."""
    K, H, S, A = R.shape
    s_idx = np.arange(S)
    V = np.zeros((K, S))
    for h in reversed(range(H)):
        a = pi_E[h]
        V = R[:, h, s_idx, a] + np.einsum("st,kt->ks", P[h, s_idx, a], V)
    return V


def _optimal_on_support(V_star: np.ndarray, V_exp: np.ndarray, d0: np.ndarray) -> np.ndarray:
    support = d0 > 0
    return np.all(V_star[:, support] <= V_exp[:, support] + TOL, axis=1)


def expert_is_optimal(R: np.ndarray, P: np.ndarray, d0: np.ndarray, pi_E: np.ndarray) -> np.ndarray:
    """(K,) bool: J^{π^E}(r; P) = max_π J^π(r; P) for a *complete* kernel P.

    The value-level definition (follow-up Def. 3.1), computed independently of
    :func:`q_recursion`: V* by plain Bellman backups against the expert's V on supp d0.
    """
    V_star = np.zeros((R.shape[0], R.shape[2]))
    for h in reversed(range(R.shape[1])):
        V_star = (R[:, h] + np.einsum("sat,kt->ksa", P[h], V_star)).max(axis=2)
    return _optimal_on_support(V_star, _expert_values(R, P, pi_E), d0)


def value_level_membership(
    R: np.ndarray, P: np.ndarray, covered: np.ndarray, d0: np.ndarray, pi_E: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(in R^∩, in R^∪) via values: the max/min completion's V*_1 against the expert's return."""
    V_exp = _expert_values(R, P, pi_E)
    sub, sup = (
        _optimal_on_support(q_recursion(R, P, covered, "plug", off)[:, 0].max(axis=2), V_exp, d0)
        for off in ("max", "min")
    )
    return sub, sup


# --------------------------------------------------------------------------- estimators


def confidence_radius(
    counts: np.ndarray, n_rewards: int, bonus: Bonus, scale: float, delta: float
) -> np.ndarray:
    """Per-triple radius; uncovered triples get 0 (they are never backed up through p̂).

    ``hoeffding`` (verify.md's reconstruction of PIRLO): b = c·sqrt(ln(2HSAK/δ) / 2N), a scalar
    Hoeffding bound per (triple, reward) with a union over the K tested rewards.
    ``l1`` (this spec's design): Weissman's β = c·sqrt(2(S ln 2 + ln(HSA/δ)) / N), which holds for
    every V at once, so no union over rewards is needed.
    """
    H, S, A = counts.shape
    N = np.maximum(counts, 1.0)
    if bonus == "hoeffding":
        rad = np.sqrt(np.log(2 * H * S * A * max(n_rewards, 1) / delta) / (2 * N))
    else:
        rad = np.sqrt(2 * (S * np.log(2) + np.log(H * S * A / delta)) / N)
    return np.where(counts > 0, scale * rad, 0.0)


def estimated_membership(
    est: Estimate,
    R: np.ndarray,
    algorithm: Literal["irlo", "pirlo"] = "pirlo",
    bonus: Bonus = "hoeffding",
    test: Test | None = None,
    bonus_scale: float = 1.0,
    delta: float = 0.1,
) -> tuple[np.ndarray, np.ndarray]:
    """(in R̂^∩, in R̂^∪), each (K,) bool, from offline data only.

    ``irlo``: the exact tests with p̂, Ẑ, Ŝ^E, π̂^E plugged in (no guarantee).
    ``pirlo`` + ``cross``: Q^+ (upper on Ẑ, max off) against Q^- (lower on Ẑ, min off);
    ∩ needs Q^+(s,a) <= Q^-(s,â), ∪ needs Q^-(s,a) <= Q^+(s,â). Only a != â is compared: with
    a = â the cross test would reject almost every reward once the bonus is positive.
    ``pirlo`` + ``tight``: ∩ compares the upper/max recursion against the lower/max one, ∪ the
    lower/min against the upper/min one, bounding exactly what the exact test compares.
    """
    if test is None:
        test = "tight" if bonus == "l1" else "cross"
    covered, states, actions = est.covered, est.expert_states, est.expert_action
    if algorithm == "irlo":
        Q_max = q_recursion(R, est.P_hat, covered, "plug", "max")
        Q_min = q_recursion(R, est.P_hat, covered, "plug", "min")
        return (optimality_test(Q_max, Q_max, states, actions),
                optimality_test(Q_min, Q_min, states, actions))
    radius = confidence_radius(est.counts, R.shape[0], bonus, bonus_scale, delta)

    def rec(on: OnCovered, off: OffCovered) -> np.ndarray:
        return q_recursion(R, est.P_hat, covered, on, off, radius, bonus)

    if test == "cross":
        Q_plus, Q_minus = rec("upper", "max"), rec("lower", "min")
        return (optimality_test(Q_plus, Q_minus, states, actions),
                optimality_test(Q_minus, Q_plus, states, actions))
    in_sub = optimality_test(rec("upper", "max"), rec("lower", "max"), states, actions)
    in_sup = optimality_test(rec("lower", "min"), rec("upper", "min"), states, actions)
    return in_sub, in_sup
