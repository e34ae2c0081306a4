"""Samplers for continuous BFNs: the original one and BFN-Solver's ODE/SDE solvers.

Denoiser interface: ``denoise(mu (n, d), t) -> x_hat (n, d)``, a data prediction; every sampler
clips x_hat to [-1, 1] (and works in data form, which is the same as recomputing
eps_hat = (mu - alpha x_hat)/sigma from the clipped x_hat, as the authors' code does).

**Grid and NFE** (authors' ``bfnsolver_i.py``): M = nfe steps on t_i = eta + (i/M)(1 - eta),
one denoiser call at each of t_0..t_{M-1}. With ``last_drop`` (default) the last call's x_hat
at t_{M-1} is returned instead of stepping on to t = 1.

Updates from s to t, h = lambda_t - lambda_s > 0:
- ``ode1`` (BFN-Solver++1): x_t = (sigma_t/sigma_s) x_s - alpha_t (e^{-h} - 1) x_hat_s;
- ``ode2m`` (++2M multistep): the same with D = (1 + 1/(2r)) x_hat_s - 1/(2r) x_hat_prev,
  r = h_prev / h, after a first ++1 step;
- ``sde2m`` (SDE-++2M): x_t = (sigma_t/sigma_s) e^{-h} x_s + alpha_t (1 - e^{-2h}) x_hat_s
  + sigma_t sqrt(1 - e^{-2h}) z, plus 1/2 alpha_t (1 - e^{-2h}) (x_hat_s - x_hat_prev)/r after
  the first step.

**Original BFN sampler** (Graves et al.), the NFE convention used here: ``nfe = N`` means
N - 1 Bayesian updates (each calling D(mu, (i-1)/n), n = N - 1) plus the final D(mu, 1), so
every denoiser call is counted. After n updates rho = sigma1^{-2} exactly (the sum telescopes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from methods.bfn_solver.schedule import ETA, SIGMA1_SQ, alpha_sigma, half_log_snr, time_grid

Denoiser = Callable[[np.ndarray, "np.ndarray | float"], np.ndarray]
SamplerName = Literal["bfn", "ode1", "ode2m", "sde2m"]
Init = Literal["zero_mean_and_std", "optimal_mean_and_std"]


class CountingDenoiser:
    """Wraps a denoiser, counting its calls (the NFE actually spent) and recording their times."""

    def __init__(self, denoise: Denoiser) -> None:
        self.denoise = denoise
        self.calls = 0
        self.times: list[float] = []

    def __call__(self, mu: np.ndarray, t) -> np.ndarray:
        self.calls += 1
        self.times.append(float(np.mean(t)))
        return self.denoise(mu, t)


def _predict(denoise: Denoiser, x: np.ndarray, t: float) -> np.ndarray:
    return np.clip(denoise(x, t), -1.0, 1.0)


def initial_state(
    n: int, d: int, rng: np.random.Generator, *, eta: float, sigma1_sq: float, init: Init,
    data_mean: np.ndarray | None = None, data_var: float | None = None,
) -> np.ndarray:
    """x at t_0 = eta: N(0, sigma_eta^2 I), or the 'optimal' N(gamma E[x], var) when the data
    mean and mean per-dimension variance tr(Cov)/d are given."""
    g, s = alpha_sigma(eta, sigma1_sq)
    if init == "zero_mean_and_std":
        return s * rng.standard_normal((n, d))
    if init == "optimal_mean_and_std":
        if data_mean is None or data_var is None:
            raise ValueError("init: optimal_mean_and_std needs the data mean and variance")
        std = np.sqrt(g * (1.0 - g) + g**2 * data_var)
        return g * data_mean + std * rng.standard_normal((n, d))
    raise ValueError(f"init: unknown initialisation {init!r}")


def solver_sample(
    denoise: Denoiser, x: np.ndarray, nfe: int, sampler: SamplerName, rng: np.random.Generator | None = None,
    *, eta: float = ETA, sigma1_sq: float = SIGMA1_SQ, last_drop: bool = True,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run ode1 / ode2m / sde2m from the state x at t_0; returns (samples, states at each t_i)."""
    if nfe < 1:
        raise ValueError("nfe: must be >= 1")
    if sampler == "sde2m" and rng is None:
        raise ValueError("sde2m needs a random generator")
    ts = time_grid(nfe, eta)
    lam = half_log_snr(ts, sigma1_sq)
    alpha, sigma = alpha_sigma(ts, sigma1_sq)
    states = [x]
    x_prev_hat, h_prev = None, None
    n_steps = nfe - 1 if last_drop else nfe
    for i in range(n_steps):
        x_hat = _predict(denoise, x, ts[i])
        h = lam[i + 1] - lam[i]
        if sampler in ("ode1", "ode2m"):
            d_term = x_hat
            if sampler == "ode2m" and x_prev_hat is not None:
                r = h_prev / h
                d_term = (1.0 + 1.0 / (2.0 * r)) * x_hat - (1.0 / (2.0 * r)) * x_prev_hat
            x = (sigma[i + 1] / sigma[i]) * x - alpha[i + 1] * np.expm1(-h) * d_term
        elif sampler == "sde2m":
            decay = -np.expm1(-2.0 * h)  # 1 - e^{-2h}
            x_new = (sigma[i + 1] / sigma[i]) * np.exp(-h) * x + alpha[i + 1] * decay * x_hat
            if x_prev_hat is not None:
                r = h_prev / h
                x_new += 0.5 * alpha[i + 1] * decay * (x_hat - x_prev_hat) / r
            x = x_new + sigma[i + 1] * np.sqrt(decay) * rng.standard_normal(x.shape)
        else:
            raise ValueError(f"sampler: unknown solver {sampler!r}")
        x_prev_hat, h_prev = x_hat, h
        states.append(x)
    if last_drop:
        return _predict(denoise, x, ts[nfe - 1]), states
    return x, states


def bfn_sample(
    denoise: Denoiser, n: int, d: int, nfe: int, rng: np.random.Generator, *, sigma1_sq: float = SIGMA1_SQ,
    mu0: np.ndarray | None = None,
) -> tuple[np.ndarray, list[np.ndarray], float]:
    """Graves et al.'s sampler with nfe - 1 updates; returns (samples, mu after each update, rho)."""
    if nfe < 1:
        raise ValueError("nfe: must be >= 1")
    updates = nfe - 1
    mu = np.zeros((n, d)) if mu0 is None else mu0
    rho = 1.0
    states = [mu]
    sigma1 = np.sqrt(sigma1_sq)
    for i in range(1, updates + 1):
        x_hat = _predict(denoise, mu, (i - 1) / updates)
        a_i = sigma1 ** (-2.0 * i / updates) * (1.0 - sigma1 ** (2.0 / updates))
        y = x_hat + rng.standard_normal(mu.shape) / np.sqrt(a_i)
        mu = (rho * mu + a_i * y) / (rho + a_i)
        rho += a_i
        states.append(mu)
    return _predict(denoise, mu, 1.0), states, rho


def sample(
    denoise: Denoiser, sampler: SamplerName, n: int, d: int, nfe: int, rng: np.random.Generator, *,
    eta: float = ETA, sigma1_sq: float = SIGMA1_SQ, init: Init = "zero_mean_and_std", last_drop: bool = True,
    data_mean: np.ndarray | None = None, data_var: float | None = None,
) -> np.ndarray:
    """n samples of dimension d with ``nfe`` denoiser calls."""
    if sampler == "bfn":
        return bfn_sample(denoise, n, d, nfe, rng, sigma1_sq=sigma1_sq)[0]
    x0 = initial_state(n, d, rng, eta=eta, sigma1_sq=sigma1_sq, init=init, data_mean=data_mean, data_var=data_var)
    return solver_sample(denoise, x0, nfe, sampler, rng, eta=eta, sigma1_sq=sigma1_sq, last_drop=last_drop)[0]
