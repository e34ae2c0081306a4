"""LSSR: the smallest sum-of-squares ratio any linear readout direction can reach.

For a representation H (m×k) with labels y: S_t = total scatter, S_w = within-class scatter,
SSR(a) = aᵀS_w a / aᵀS_t a, and LSSR(H) = min SSR(a) over directions with aᵀS_t a > 0, i.e. the
smallest generalised eigenvalue of (S_w, S_t) on the range of S_t (the smallest eigenvalue of
S_t⁺S_w restricted to that range). [R] verify.md's reading of the paper's "Sum of Squares
Ratio"; the paper's exact formula was not seen.

An invertible linear map of H leaves LSSR unchanged, and any linear/affine map can only restrict
the directions the minimum runs over, so no linear network can lower it; LN can.
"""

from __future__ import annotations

import numpy as np

RANK_TOL = 1e-12


def lssr(H, y) -> float:
    """LSSR of ``H`` (m, k) for integer labels ``y`` (m,); eigenvalues of S_t below
    ``RANK_TOL`` × its largest count as zero (outside the range)."""
    H = np.asarray(H, dtype=np.float64)
    y = np.asarray(y)
    centred = H - H.mean(axis=0)
    S_t = centred.T @ centred
    within = H.copy()
    for c in np.unique(y):
        within[y == c] -= H[y == c].mean(axis=0)
    S_w = within.T @ within
    evals, evecs = np.linalg.eigh(S_t)
    keep = evals > RANK_TOL * max(evals.max(initial=0.0), 1e-300)
    if not keep.any():
        return float("nan")
    W = evecs[:, keep] / np.sqrt(evals[keep])  # whitening on the range of S_t
    ratios = np.linalg.eigvalsh(W.T @ S_w @ W)
    return float(max(ratios.min(), 0.0))
