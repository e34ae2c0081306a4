"""Reference policy: decouple learning the dual price from the decisions (explore -> exploit).

For t <= T_e = ceil(T^(2/3)) a learning dual (step 0.5/sqrt(t), its own hypothetical decisions)
estimates the price while the decision dual steps with 1/sqrt(T_e); then the decision dual
restarts from the learned price (mean of the learning dual over the second half of exploration)
and steps with 10*T^(-2/3). Constants are the method's defaults, untuned on this family.
"""

import numpy as np

from methods.online_lp.policies import ExploreExploit, accept_rule


def init(m: int, d: np.ndarray, T: int) -> np.ndarray:
    return ExploreExploit.create(T, d).state


def decide(state, c, a, b, t):
    policy = ExploreExploit(state)
    accept = accept_rule(policy.price, c, a, b)
    policy.observe(t, c, a, accept.astype(np.float64))
    return accept, state
