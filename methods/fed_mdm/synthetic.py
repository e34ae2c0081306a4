"""Sampling clients from an MDM, and the CPU-scale synthetic truth of the spec."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Truth:
    phi: np.ndarray
    alphas: np.ndarray


def builtin_truth() -> Truth:
    """K = 3, C = 10: two half-split components and a diffuse one; phi = (0.4, 0.4, 0.2)."""
    a1 = np.array([2.0] * 5 + [0.1] * 5)
    return Truth(np.array([0.4, 0.4, 0.2]), np.stack([a1, a1[::-1], np.full(10, 0.3)]))


def dirichlet_rows(alphas: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One Dirichlet draw per row of ``alphas`` (gamma trick).

    With tiny alphas every gamma draw can underflow to 0; such a row falls back to a one-hot
    at a class drawn in proportion to alpha, which is the limit of the distribution.
    """
    g = rng.gamma(alphas)
    tot = g.sum(axis=1, keepdims=True)
    bad = tot[:, 0] <= 0
    if bad.any():
        for i in np.flatnonzero(bad):
            g[i] = 0.0
            g[i, rng.choice(alphas.shape[1], p=alphas[i] / alphas[i].sum())] = 1.0
        tot = g.sum(axis=1, keepdims=True)
    return g / tot


def sample_clients(
    phi: np.ndarray,
    alphas: np.ndarray,
    n_clients: int,
    rng: np.random.Generator,
    sizes: tuple[int, int] | np.ndarray = (20, 80),
) -> tuple[np.ndarray, np.ndarray]:
    """Label counts (U, C) and components (U,) of fresh clients.

    ``sizes`` is either (n_min, n_max) for sizes uniform on n_min..n_max-1, independent of the
    component, or an array of shape (K, 2) giving each component its own range (size linked
    to the component, as in the hidden task generator).
    """
    phi, alphas = np.asarray(phi, float), np.asarray(alphas, float)
    ks = rng.choice(len(phi), size=n_clients, p=phi / phi.sum())
    ranges = np.asarray(sizes)
    if ranges.ndim == 1:
        n = rng.integers(ranges[0], ranges[1], size=n_clients)
    else:
        n = rng.integers(ranges[ks, 0], ranges[ks, 1])
    q = dirichlet_rows(alphas[ks], rng)
    return rng.multinomial(n, q), ks


def synthetic_split(
    n_train: int = 600, n_test: int = 600, n_min: int = 20, n_max: int = 80, seed: int = 0,
    truth: Truth | None = None,
) -> tuple[np.ndarray, np.ndarray, Truth]:
    """Train then test clients from one generator (train drawn first)."""
    truth = truth or builtin_truth()
    rng = np.random.default_rng(seed)
    train, _ = sample_clients(truth.phi, truth.alphas, n_train, rng, (n_min, n_max))
    test, _ = sample_clients(truth.phi, truth.alphas, n_test, rng, (n_min, n_max))
    return train, test, truth
