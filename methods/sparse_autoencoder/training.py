"""Encoder initialisations, the population loss, and the two GD protocols (population, surrogate).

Population GD (methods2) is exact in expectation for bg/gaussian: given the support mask m, Bx is
Gaussian, so E[z zᵀ | m] and E[x zᵀ | m] follow from the arcsine law. Averaging over fresh masks
makes it stochastic only in m. Sparse-Rademacher data have no such closed form; there GD runs on
a tanh(β·) surrogate of sign with β annealed geometrically from ``beta_start`` to ``beta_end``
(verify.md's protocol; its lr, batch, steps and schedule were not recorded). Defaults: lr 3e-2,
batch 512, 1500 steps, and the learning rate decays along a cosine to 0: this package's
calibration. With a constant rate, Adam's noise at
the end leaves correlated rows (p = 0.2: MSE 0.39 against a rotation's 0.37) and the p = 0.8
run had not localised after 1500 steps (row max 0.53); with the decay both reproduce verify's
table (0.368 / row max 0.22 at p = 0.2; 0.185 / 1.00 at p = 0.8).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import torch

from methods.sparse_autoencoder.data import DTYPE, DataKind, generator, sample

EncoderInit = Literal["gaussian", "rotation", "identity"]
DIAG_JITTER = 1e-6
CORR_CLAMP = 1.0 - 1e-7


def initial_encoder(kind: EncoderInit, n: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """B (n, d): iid N(0, 1/d), orthonormal rows of a random rotation, or the identity."""
    if kind == "identity":
        if n != d:
            raise ValueError("encoder_init: identity needs n = d (rate 1)")
        return torch.eye(d, dtype=DTYPE)
    G = torch.randn(d, d if kind == "rotation" else n, generator=gen, dtype=DTYPE)
    if kind == "gaussian":
        return G.T / math.sqrt(d)
    Q, R = torch.linalg.qr(G)
    Q = Q * torch.sign(torch.diagonal(R))  # Haar-distributed
    return Q[:n].clone()


def initial_decoder(n: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """A_ij ~ 0.1·N(0, 1/n)."""
    return 0.1 * torch.randn(d, n, generator=gen, dtype=DTYPE) / math.sqrt(n)


def population_loss(
    A: torch.Tensor, B: torch.Tensor, p: float, masks: torch.Tensor
) -> torch.Tensor:
    """E‖x - A·sign(Bx)‖²/d given each mask (M, d), averaged over the masks.

    Σ = B diag(m) Bᵀ/p (+1e-6 on the diagonal); E[z_i z_j | m] = (2/π) arcsin(ρ_ij) off the
    diagonal and 1 on it; E[x z_i | m] = √(2/π) diag(m) b_i / (p √Σ_ii); E‖x‖² | m = |m|/p.
    """
    d, n = A.shape
    Bm = B[None] * masks[:, None, :] / p  # (M, n, d)
    Sigma = Bm @ B.T + DIAG_JITTER * torch.eye(n, dtype=B.dtype)
    sd = torch.sqrt(torch.diagonal(Sigma, dim1=1, dim2=2))  # (M, n)
    corr = (Sigma / (sd[:, :, None] * sd[:, None, :])).clamp(-CORR_CLAMP, CORR_CLAMP)
    eye = torch.eye(n, dtype=torch.bool)
    Ezz = torch.where(eye, torch.ones((), dtype=B.dtype), (2.0 / math.pi) * torch.asin(corr))
    Exz = math.sqrt(2.0 / math.pi) * Bm.transpose(1, 2) / sd[:, None, :]  # (M, d, n)
    cross = (A[None] * Exz).sum(dim=(1, 2))
    quad = ((A.T @ A)[None] * Ezz).sum(dim=(1, 2))
    return ((masks.sum(dim=1) / p - 2.0 * cross + quad) / d).mean()


def sample_masks(p: float, M: int, d: int, gen: torch.Generator) -> torch.Tensor:
    return (torch.rand(M, d, generator=gen, dtype=DTYPE) < p).to(DTYPE)


Log = Callable[[int, float], None]


def _adam_step(opt: torch.optim.Optimizer, loss: torch.Tensor, step: int, steps: int,
               history: list[float], log: Log | None) -> None:
    """One optimiser step, and the loss recorded every 10 steps and at the last one (both
    trainers report their curve on the same grid, so the tools' histories line up)."""
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == steps - 1:
        history.append(loss.item())
        if log is not None:
            log(step, history[-1])

def train_population(
    B: torch.Tensor, A: torch.Tensor, p: float, steps: int = 300, lr: float = 2e-2,
    masks_per_step: int = 16, seed: int = 0, log: Log | None = None,
) -> tuple[torch.Tensor, torch.Tensor, list[float]]:
    """Joint Adam on (A, B) over the population loss; returns (B, A, loss every 10 steps)."""
    B, A = B.clone().requires_grad_(True), A.clone().requires_grad_(True)
    opt = torch.optim.Adam([A, B], lr=lr)
    gen, d = generator(seed, 11), B.shape[1]
    history = []
    for step in range(steps):
        loss = population_loss(A, B, p, sample_masks(p, masks_per_step, d, gen))
        _adam_step(opt, loss, step, steps, history, log)
    return B.detach(), A.detach(), history


def train_surrogate(
    B: torch.Tensor, A: torch.Tensor, kind: DataKind, p: float, steps: int = 1500,
    lr: float = 1e-2, batch_size: int = 512, beta_start: float = 2.0, beta_end: float = 100.0,
    seed: int = 0, log: Log | None = None,
) -> tuple[torch.Tensor, torch.Tensor, list[float]]:
    """Joint Adam on the sample MSE of A·tanh(β·Bx), β geometric from beta_start to beta_end,
    the learning rate decaying from ``lr`` to 0 along a cosine."""
    B, A = B.clone().requires_grad_(True), A.clone().requires_grad_(True)
    opt = torch.optim.Adam([A, B], lr=lr)
    gen, d = generator(seed, 12), B.shape[1]
    history = []
    for step in range(steps):
        frac = step / max(steps - 1, 1)
        beta = beta_start * (beta_end / beta_start) ** frac
        for group in opt.param_groups:
            group["lr"] = lr * 0.5 * (1.0 + math.cos(math.pi * frac))
        X = sample(kind, p, batch_size, d, gen)
        loss = ((X - torch.tanh(beta * X @ B.T) @ A.T) ** 2).sum(dim=1).mean() / d
        _adam_step(opt, loss, step, steps, history, log)
    return B.detach(), A.detach(), history
