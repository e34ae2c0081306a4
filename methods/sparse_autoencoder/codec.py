"""The sign encoder and closed forms / shape metrics about it."""

from __future__ import annotations

import math

import torch

from methods.sparse_autoencoder.data import DataKind


def encode(B: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """z = sign(Bx) ∈ {±1}^n per row of X, with sign(0) := +1."""
    return torch.where(X @ B.T >= 0, 1.0, -1.0).to(X.dtype)


def gaussian_benchmark(rate: float) -> float:
    """R* = 1 - 2r/π: the optimum for Gaussian data at r ≤ 1 (orthonormal B, A = √(2/π)Bᵀ).

    [R] from the ICML 2023 companion paper; holds exactly for the population loss.
    """
    return 1.0 - 2.0 * rate / math.pi


def identity_closed_form(kind: DataKind, p: float) -> float:
    """MSE of the identity encoder with the best per-coordinate *affine* decoder (derived).

    bg: 1 - 2/(π(2-p)) ≥ 1 - 2/π, so the identity never beats a rotation; sparse Rademacher:
    (1-p)/(2-p), which crosses a rotation's ≈ 0.36 near p ≈ 0.44 (the predicted switch).
    """
    if kind == "gaussian":
        p = 1.0
    if kind == "sparse_rademacher":
        return (1.0 - p) / (2.0 - p)
    return 1.0 - 2.0 / (math.pi * (2.0 - p))


def _unit_rows(B: torch.Tensor) -> torch.Tensor:
    return B / B.norm(dim=1, keepdim=True).clamp_min(1e-300)


def row_max_entry(B: torch.Tensor) -> float:
    """Mean over rows of max |B̃_ij|: 1 for a signed permutation, ≈ 0.33 for a random rotation."""
    return float(_unit_rows(B).abs().max(dim=1).values.mean())


def row_gram_offdiag(B: torch.Tensor) -> float:
    """Largest |cos| between two rows of B (0 for orthogonal rows)."""
    Bt = _unit_rows(B)
    G = (Bt @ Bt.T).abs()
    G.fill_diagonal_(0.0)
    return float(G.max()) if G.numel() > 1 else 0.0
