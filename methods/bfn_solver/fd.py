"""Fréchet distance between Gaussians fitted to two sample sets (pixel space, no features)."""

from __future__ import annotations

import numpy as np


def _psd_sqrt(c: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(c)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """||m1 - m2||^2 + tr(C1 + C2 - 2 (C1 C2)^{1/2}).

    tr (C1 C2)^{1/2} is computed as tr (C1^{1/2} C2 C1^{1/2})^{1/2}, the same number from a
    symmetric eigenproblem, which stays stable for the near-singular covariances of digits
    (always-black border pixels).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("samples must be finite")
    m1, m2 = a.mean(0), b.mean(0)
    c1, c2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    s1 = _psd_sqrt(c1)
    cross = np.sqrt(np.clip(np.linalg.eigvalsh(s1 @ c2 @ s1), 0.0, None)).sum()
    return float(((m1 - m2) ** 2).sum() + np.trace(c1) + np.trace(c2) - 2.0 * cross)
