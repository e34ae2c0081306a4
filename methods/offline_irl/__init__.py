"""Offline inverse RL: sound subset/superset estimates of the feasible reward set.

After Lazzati, Mutti & Metelli, "Offline Inverse RL: New Solution Concepts and Provably
Efficient Algorithms" (ICML 2024, arXiv 2402.15392).

[feasible-set definitions verified via the authors' follow-up (arXiv 2402.15392 cited as [29]);
membership tests derived, not quoted; PIRLO bonus reconstructed]

The paper body was not readable, so this package implements the spec's reading:

* ``R^∩`` / ``R^∪`` are the intersection / union of the feasible sets over every kernel that
  agrees with the true one on the covered triples ``Z``; both are decided exactly by a Q-test on
  the max- / min-completion (:mod:`.membership`).
* IRLO is the plug-in estimate; PIRLO is a pessimistic estimate whose Hoeffding bonus with a
  union bound over the tested rewards is a reconstruction, not the paper's; ``bonus="l1"`` with
  ``test="tight"`` is a Weissman L1 confidence set designed for this spec.
* "Inclusion monotonicity" is implemented as "with high probability R̂^∩ ⊆ R^∩ and
  R̂^∪ ⊇ R^∪". The other reading (R̂^∩ grows set-wise with n) is not guaranteed and untested.
* The expert is assumed deterministic, as in the follow-up's theorems.
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "estimate": ["Estimate", "estimate_from_data"],
    "mdp": ["MDP", "generate_instance", "sample_datasets"],
    "membership": ["estimated_membership", "exact_membership", "expert_is_optimal", "value_level_membership"],
    "rewards": ["candidate_pool"],
})
