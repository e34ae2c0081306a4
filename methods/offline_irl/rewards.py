"""The spec's candidate reward pool: noisy copies of the expert's action-sign pattern.

Uniform random rewards are almost never feasible, so the pool mixes the signal
``sigma_E = +1 on the expert action, -1 elsewhere`` with noise at random strengths; this puts a
few hundred of 600 candidates on each side of both sets' boundaries.
"""

from __future__ import annotations

import numpy as np

N_CANDIDATES = 600


def candidate_pool(
    pi_E: np.ndarray,
    A: int,
    seed: int = 0,
    n_candidates: int = N_CANDIDATES,
    r_true: np.ndarray | None = None,
) -> np.ndarray:
    """(K, H, S, A) rewards clip(kappa*sigma_E + sigma*U(-1,1), -1, 1); r_true appended last."""
    rng = np.random.default_rng([seed, 2])
    H, S = pi_E.shape
    sigma_E = np.where(pi_E[..., None] == np.arange(A), 1.0, -1.0)
    kappa = rng.uniform(0.0, 1.0, size=(n_candidates, 1, 1, 1))
    sigma = rng.uniform(0.0, 1.0, size=(n_candidates, 1, 1, 1))
    noise = rng.uniform(-1.0, 1.0, size=(n_candidates, H, S, A))
    pool = np.clip(kappa * sigma_E + sigma * noise, -1.0, 1.0)
    if r_true is not None:
        pool = np.concatenate([pool, r_true[None]], axis=0)
    return pool
