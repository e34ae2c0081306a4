"""The Dirichlet-multinomial log-likelihood, the one formula every other module builds on."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln


def log_dm(counts: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """ln DM(n_u | alpha_k) for every client u and component k, shape (U, K).

    The multinomial coefficient ln(n!/prod n_c!) is left out: it does not depend on the
    parameters, so EM and model comparison never need it (``log_multinomial_coef`` adds it).
    """
    counts = np.asarray(counts, dtype=float)
    alphas = np.atleast_2d(np.asarray(alphas, dtype=float))
    n = counts.sum(axis=1, keepdims=True)  # (U, 1)
    a_sum = alphas.sum(axis=1)[None, :]  # (1, K)
    per_class = gammaln(counts[:, None, :] + alphas[None]) - gammaln(alphas)[None]  # (U, K, C)
    return gammaln(a_sum) - gammaln(n + a_sum) + per_class.sum(axis=2)


def logsumexp(x: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """Stable log-sum-exp; scipy's array-API version costs half of an EM iteration."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def log_multinomial_coef(counts: np.ndarray) -> np.ndarray:
    """ln(n! / prod_c n_c!) per client."""
    counts = np.asarray(counts, dtype=float)
    return gammaln(counts.sum(axis=1) + 1) - gammaln(counts + 1).sum(axis=1)


def mixture_loglik(counts: np.ndarray, phi: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """ln sum_k phi_k DM(n_u | alpha_k) per client (no coefficient, no size term)."""
    with np.errstate(divide="ignore"):
        log_phi = np.log(np.asarray(phi, dtype=float))
    return logsumexp(log_phi[None] + log_dm(counts, alphas), axis=1)
