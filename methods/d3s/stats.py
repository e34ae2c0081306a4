"""Gaussian feature statistics and the KL between two Gaussians."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Gaussian:
    mean: torch.Tensor  # (k,)
    cov: torch.Tensor  # (k, k)


def moments(features: torch.Tensor) -> Gaussian:
    """Mean and full covariance with 1/n normalisation (float64 for a stable Cholesky)."""
    f = features.double()
    mean = f.mean(0)
    centred = f - mean
    return Gaussian(mean, centred.T @ centred / f.shape[0])


def regularised(g: Gaussian, eps: float) -> Gaussian:
    return Gaussian(g.mean, g.cov + eps * torch.eye(g.cov.shape[0], dtype=g.cov.dtype))


def gaussian_kl(p0: Gaussian, p1: Gaussian) -> torch.Tensor:
    """KL(N₀ ‖ N₁) = ½[tr(Σ₁⁻¹Σ₀) + (μ₁ − μ₀)ᵀΣ₁⁻¹(μ₁ − μ₀) − k + log det Σ₁ − log det Σ₀]."""
    k = p0.mean.shape[0]
    chol1 = torch.linalg.cholesky(p1.cov)
    chol0 = torch.linalg.cholesky(p0.cov)
    # tr(Σ₁⁻¹Σ₀) = ‖L₁⁻¹L₀‖²_F; the Mahalanobis term through the same triangular solve
    a = torch.linalg.solve_triangular(chol1, chol0, upper=False)
    diff = torch.linalg.solve_triangular(chol1, (p1.mean - p0.mean).unsqueeze(1), upper=False)
    logdet1 = 2.0 * torch.log(torch.diagonal(chol1)).sum()
    logdet0 = 2.0 * torch.log(torch.diagonal(chol0)).sum()
    return 0.5 * ((a * a).sum() + (diff * diff).sum() - k + logdet1 - logdet0)
