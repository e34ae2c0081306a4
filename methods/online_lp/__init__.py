"""Decoupled first-order online LP (Gao, Sun, Xue, Ge, Ye, ICML 2024), at CPU scale.

Learning the optimal dual price and using a price to accept or reject are decoupled: a learning
dual estimates the price while exploring, then hands it to the decision dual, which restarts.
Structure from the journal version's Alg. 3 via a third-party summary; constants ours (see
:mod:`methods.online_lp.policies`). The T^{1/3} rate is not demonstrated at this scale.
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "instances": ["Instance", "make_instance"],
    "offline": ["OfflineSolution", "dual_value", "solve_offline"],
    "policies": ["Concurrent", "ExploreExploit", "Subgradient", "accept_rule", "subgradient_step"],
    "simulate": ["Batch", "PassResult", "run_pass"],
})
