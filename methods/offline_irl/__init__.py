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


from __future__ import annotations

import importlib

# Exports resolve lazily: importing methods.offline_irl.tools (as the workbench does to list
# tools) must never pull in numpy or torch.
_EXPORTS = {
    "Estimate": "methods.offline_irl.estimate",
    "MDP": "methods.offline_irl.mdp",
    "candidate_pool": "methods.offline_irl.rewards",
    "estimate_from_data": "methods.offline_irl.estimate",
    "estimated_membership": "methods.offline_irl.membership",
    "exact_membership": "methods.offline_irl.membership",
    "expert_is_optimal": "methods.offline_irl.membership",
    "generate_instance": "methods.offline_irl.mdp",
    "sample_datasets": "methods.offline_irl.mdp",
    "value_level_membership": "methods.offline_irl.membership",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
