"""Estimated sets against the exact ones: the violations that break the sanity check, recall."""

from __future__ import annotations

import numpy as np


def compare_to_truth(
    est_sub: np.ndarray, est_sup: np.ndarray, true_sub: np.ndarray, true_sup: np.ndarray
) -> dict[str, float | int]:
    """Soundness is ``subset_false_in == superset_false_out == 0`` (R̂^∩ ⊆ R^∩, R̂^∪ ⊇ R^∪)."""
    n_sub, n_est_sup = int(true_sub.sum()), int(est_sup.sum())
    return {
        "n_subset": n_sub,
        "n_superset": int(true_sup.sum()),
        "subset_false_in": int((est_sub & ~true_sub).sum()),
        "superset_false_out": int((true_sup & ~est_sup).sum()),
        "subset_recall": float((est_sub & true_sub).sum() / n_sub) if n_sub else 1.0,
        "superset_precision": (
            float((est_sup & true_sup).sum() / n_est_sup) if n_est_sup else 1.0
        ),
    }


def missed_expert_states(true_states: np.ndarray, est_states: np.ndarray) -> int:
    """Σ_h |S^E_h \\ Ŝ^E_h|: expert-reachable states D^E never shows (they void the guarantee)."""
    return int((true_states & ~est_states).sum())
