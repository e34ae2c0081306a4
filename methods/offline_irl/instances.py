"""Complete problem instances (data, candidate pool, ground truth) as plain dicts of arrays.

Used by the ``offline-irl`` task's prepare/eval scripts and the benchmark, so that the instance a
solver sees and the truth it is scored against are built in one place.
"""

from __future__ import annotations

import numpy as np

from methods.offline_irl.mdp import generate_instance, sample_datasets
from methods.offline_irl.membership import exact_membership
from methods.offline_irl.rewards import candidate_pool

SOLVER_KEYS = ("D_E", "D_b", "R", "S", "A", "H", "n", "delta")
"""What a solver may see; everything else in :func:`build_instance`'s dict is ground truth."""


def build_instance(
    seed: int,
    n: int = 200,
    d_min: float = 0.03,
    delta: float = 0.1,
    S: int = 6,
    A: int = 3,
    H: int = 4,
) -> dict[str, np.ndarray]:
    """Generator MDP + D^E, D^b + pool (600 candidates and r_true) + exact R^∩/R^∪ labels."""
    mdp, r_true = generate_instance(S, A, H, seed, d_min)
    D_E, D_b = sample_datasets(mdp, n, seed)
    R = candidate_pool(mdp.pi_E, A, seed, r_true=r_true)
    true_sub, true_sup = exact_membership(R, mdp.P, mdp.covered(), mdp.expert_states(), mdp.pi_E)
    return {
        "D_E": D_E, "D_b": D_b, "R": R, "S": np.int64(S), "A": np.int64(A), "H": np.int64(H),
        "n": np.int64(n), "delta": np.float64(delta),
        "P": mdp.P, "d0": mdp.d0, "pi_E": mdp.pi_E, "pi_b": mdp.pi_b,
        "in_subset_true": true_sub, "in_superset_true": true_sup,
        "expert_states_true": mdp.expert_states(),
    }
