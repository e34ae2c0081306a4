"""Baseline policy: the single-sequence dual subgradient (Li-Sun-Ye) with step 2/sqrt(T).

Interface (see NOTES.md): every array has one row per instance; rows are independent.
- init(m, d, T) -> state: float64 array (n, k), k <= 8*m + 8. d is (n, m): each row's budget
  per arrival (the total budget of an instance is T * d).
- decide(state, c, a, b, t) -> (accept, state): c (n,) rewards, a (n, m) consumptions,
  b (n, m) remaining budgets, t the 1-based time. accept is a bool array (n,).
"""

import numpy as np

from methods.online_lp.policies import Subgradient, accept_rule

ALPHA_SCALE = 2.0  # step alpha = ALPHA_SCALE / sqrt(T); tuned on this family (1 and 1.5 are worse)


def init(m: int, d: np.ndarray, T: int) -> np.ndarray:
    return Subgradient.create(T, d, alpha_scale=ALPHA_SCALE).state


def decide(state, c, a, b, t):
    policy = Subgradient(state)
    accept = accept_rule(policy.price, c, a, b)
    policy.observe(t, c, a, accept.astype(np.float64))
    return accept, state
