"""Decoupled first-order online LP (Gao, Sun, Xue, Ge, Ye, ICML 2024), at CPU scale.

Learning the optimal dual price and using a price to accept or reject are decoupled: a learning
dual estimates the price while exploring, then hands it to the decision dual, which restarts.
Structure from the journal version's Alg. 3 via a third-party summary; constants ours (see
:mod:`methods.online_lp.policies`). The T^{1/3} rate is not demonstrated at this scale.
"""

from methods.online_lp.instances import Instance, make_instance
from methods.online_lp.offline import OfflineSolution, dual_value, solve_offline
from methods.online_lp.policies import (
    Concurrent,
    ExploreExploit,
    Subgradient,
    accept_rule,
    subgradient_step,
)
from methods.online_lp.simulate import Batch, PassResult, run_pass

__all__ = [
    "Batch",
    "Concurrent",
    "ExploreExploit",
    "Instance",
    "OfflineSolution",
    "PassResult",
    "Subgradient",
    "accept_rule",
    "dual_value",
    "make_instance",
    "run_pass",
    "solve_offline",
    "subgradient_step",
]
