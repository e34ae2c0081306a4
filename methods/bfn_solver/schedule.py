"""The continuous-data BFN schedule in its diffusion reading (Xue et al., ICML 2024).

Time runs from t = 0 (prior) to t = 1 (data). gamma(t) = 1 - sigma1^(2t); the Bayesian-flow
marginal is mu_t = gamma x + sqrt(gamma (1 - gamma)) eps, i.e. a Gaussian diffusion with
alpha_t = gamma(t), sigma_t = sqrt(gamma (1 - gamma)) and half log-SNR
lambda_t = log alpha_t - log sigma_t = 1/2 log(gamma / (1 - gamma)), increasing in t.
"""

from __future__ import annotations

import numpy as np

SIGMA1_SQ = 1e-6
ETA = 0.01


def gamma(t: np.ndarray | float, sigma1_sq: float = SIGMA1_SQ) -> np.ndarray:
    return 1.0 - np.power(sigma1_sq, np.asarray(t, dtype=np.float64))


def alpha_sigma(t: np.ndarray | float, sigma1_sq: float = SIGMA1_SQ) -> tuple[np.ndarray, np.ndarray]:
    g = gamma(t, sigma1_sq)
    return g, np.sqrt(g * (1.0 - g))


def half_log_snr(t: np.ndarray | float, sigma1_sq: float = SIGMA1_SQ) -> np.ndarray:
    g = gamma(t, sigma1_sq)
    return 0.5 * (np.log(g) - np.log1p(-g))


def time_grid(steps: int, eta: float = ETA) -> np.ndarray:
    """t_i = eta + (i / M)(1 - eta), i = 0..M (the authors' uniform grid)."""
    return eta + np.arange(steps + 1, dtype=np.float64) / steps * (1.0 - eta)
