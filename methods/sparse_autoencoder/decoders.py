"""Linear decoders (analytic and least-squares refit) and the Bussgang-fitted denoisers.

Bussgang: for Gaussian-like y = A·sign(Bx), model each coordinate as y ≈ c·x + σ·w with w
independent N(0,1) noise; c and σ² are pooled over coordinates and fitted on samples that are
never the test set. The denoiser is then the scalar posterior mean E[x | y] under the data's
prior (three-point for sparse Rademacher, spike-and-slab for BG, linear for Gaussian).
"""

from __future__ import annotations

import math

import torch

from methods.sparse_autoencoder.codec import encode
from methods.sparse_autoencoder.data import DataKind, sample

CHUNK = 20_000


def refit_linear(B: torch.Tensor, kind: DataKind, p: float, n_samples: int,
                 gen: torch.Generator) -> torch.Tensor:
    """Least-squares A (no bias) for the hard-sign codes of ``n_samples`` fresh samples."""
    n, d = B.shape
    ZZ = torch.zeros(n, n, dtype=B.dtype)
    XZ = torch.zeros(d, n, dtype=B.dtype)
    done = 0
    while done < n_samples:
        m = min(CHUNK, n_samples - done)
        X = sample(kind, p, m, d, gen)
        Z = encode(B, X)
        ZZ += Z.T @ Z
        XZ += X.T @ Z
        done += m
    return XZ @ torch.linalg.pinv(ZZ)


def bussgang_fit(A: torch.Tensor, B: torch.Tensor, kind: DataKind, p: float, n_samples: int,
                 gen: torch.Generator) -> dict[str, float]:
    """c = Σ y x / Σ x², σ² = mean (y - c x)², pooled over coordinates."""
    X = sample(kind, p, n_samples, B.shape[1], gen)
    Y = encode(B, X) @ A.T
    c = float((Y * X).sum() / (X * X).sum())
    return {"c": c, "sigma2": float(((Y - c * X) ** 2).mean())}


def _normal_pdf(y: torch.Tensor, var: float) -> torch.Tensor:
    return torch.exp(-0.5 * y * y / var) / math.sqrt(2.0 * math.pi * var)


def denoise(Y: torch.Tensor, kind: DataKind, p: float, c: float, sigma2: float) -> torch.Tensor:
    """E[x_i | y_i] for y = c x + σ w under the unit-variance prior of ``kind``, elementwise."""
    if kind == "gaussian":
        return c / (c * c + sigma2) * Y
    if kind == "bg":
        slab = c * c / p + sigma2
        on = p * _normal_pdf(Y, slab)
        off = (1.0 - p) * _normal_pdf(Y, sigma2)
        return on / (on + off) * (c / p) / slab * Y
    a = 1.0 / math.sqrt(p)  # sparse Rademacher: x ∈ {0, ±a}
    log_w = torch.stack([
        math.log(1.0 - p) - 0.5 * Y * Y / sigma2 if p < 1 else torch.full_like(Y, -math.inf),
        math.log(p / 2) - 0.5 * (Y - c * a) ** 2 / sigma2,
        math.log(p / 2) - 0.5 * (Y + c * a) ** 2 / sigma2,
    ])
    w = torch.softmax(log_w, dim=0)
    return a * (w[1] - w[2])


def mse(B: torch.Tensor, decode, kind: DataKind, p: float, n_samples: int,
        gen: torch.Generator) -> float:
    """E‖x - decode(sign(Bx))‖²/d on fresh samples; ``decode`` maps codes Z (N, n) to X̂."""
    d, total, done = B.shape[1], 0.0, 0
    while done < n_samples:
        m = min(CHUNK, n_samples - done)
        X = sample(kind, p, m, d, gen)
        total += float(((X - decode(encode(B, X))) ** 2).sum())
        done += m
    return total / (n_samples * d)
