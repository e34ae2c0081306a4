"""The sampler the task scores: the original continuous BFN sampler (Graves et al.).

sample(denoise, n, nfe, rng) must return an (n, 64) array of samples in data space, calling
denoise(mu, t) at most `nfe` times, each time with mu of shape (n, 64) and t a float (or one
value per row) in [0, 1]. denoise returns x_hat (n, 64), its estimate of the data given mu at
time t, where mu_t = gamma(t) x + sqrt(gamma(t) (1 - gamma(t))) eps and
gamma(t) = 1 - SIGMA1_SQ**t (t = 0 is pure prior, t = 1 is data).

Here: nfe - 1 Bayesian updates, each calling denoise once, then a final call at t = 1.
"""

import numpy as np

SIGMA1_SQ = 1e-6
D = 64


def sample(denoise, n: int, nfe: int, rng: np.random.Generator) -> np.ndarray:
    updates = nfe - 1
    sigma1 = np.sqrt(SIGMA1_SQ)
    mu = np.zeros((n, D))
    rho = 1.0
    for i in range(1, updates + 1):
        x_hat = np.clip(denoise(mu, (i - 1) / updates), -1.0, 1.0)
        alpha = sigma1 ** (-2.0 * i / updates) * (1.0 - sigma1 ** (2.0 / updates))
        y = x_hat + rng.standard_normal(mu.shape) / np.sqrt(alpha)
        mu = (rho * mu + alpha * y) / (rho + alpha)
        rho += alpha
    return np.clip(denoise(mu, 1.0), -1.0, 1.0)
