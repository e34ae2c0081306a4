"""Gumbel-softmax relaxation of Poisson spike counts (the paper's differentiable D).

A hidden count is treated as categorical on {0..K-1} with pi_k = Pois(k; lambda) for k >= 1 and
pi_0 = 1 - sum_{k>=1} pi_k: the whole tail mass is folded into 0 (the spec's reading; the
alternative, renormalising, is not used). A sample is y = softmax((ln pi + g)/tau) with Gumbel
noise g, and the soft count z = sum_k k y_k lies in [0, K-1]. log y is kept through
log_softmax, so the Concrete density stays finite at small tau.
"""

from __future__ import annotations

import math

import torch


def log_pi(lam: torch.Tensor, K: int) -> torch.Tensor:
    """(..., K) log category probabilities for rates ``lam`` (...)."""
    k = torch.arange(1, K, dtype=lam.dtype)
    log_tail = k * torch.log(lam)[..., None] - lam[..., None] - torch.lgamma(k + 1.0)
    pi0 = -torch.expm1(torch.logsumexp(log_tail, dim=-1))  # 1 - sum_k pi_k
    return torch.cat([torch.log(pi0.clamp_min(1e-300))[..., None], log_tail], dim=-1)


def sample_log_y(log_p: torch.Tensor, tau: float, gen: torch.Generator | None = None) -> torch.Tensor:
    """log of a Concrete sample y = softmax((ln pi + g)/tau); reparameterised in ln pi."""
    u = torch.rand(log_p.shape, dtype=log_p.dtype, generator=gen).clamp(1e-12, 1 - 1e-12)
    g = -torch.log(-torch.log(u))
    return torch.log_softmax((log_p + g) / tau, dim=-1)


def soft_count(log_y: torch.Tensor) -> torch.Tensor:
    """z = sum_k k y_k in [0, K-1]."""
    k = torch.arange(log_y.shape[-1], dtype=log_y.dtype)
    return (log_y.exp() * k).sum(dim=-1)


def concrete_log_density(log_y: torch.Tensor, log_p: torch.Tensor, tau: float) -> torch.Tensor:
    """ln Concrete(y; pi, tau) = ln G(K) + (K-1) ln tau - K lse_k(ln pi_k - tau ln y_k)
    + sum_k (ln pi_k - (tau+1) ln y_k), density on the simplex's first K-1 coordinates."""
    K = log_y.shape[-1]
    return (
        math.lgamma(K)
        + (K - 1) * math.log(tau)
        - K * torch.logsumexp(log_p - tau * log_y, dim=-1)
        + (log_p - (tau + 1.0) * log_y).sum(dim=-1)
    )
