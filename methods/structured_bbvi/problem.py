"""Gaussian hierarchical linear regression: a hierarchical model whose posterior is known exactly.

β ~ N(0, I_{d_G}) is global, z_n ~ N(0, I_{d_L}) is local to group n, and
y_nj = x_njᵀβ + w_njᵀz_n + ε_nj with ε ~ N(0, 1). With θ = (β, z_1, …, z_N) and the design Φ,
the posterior is N(μ, Λ⁻¹), Λ = I + ΦᵀΦ, μ = Λ⁻¹Φᵀy, so the KL of any Gaussian q to it is exact
and the iterations a variational family needs to reach a KL target can be counted without noise.
The locals are independent given β, so the lower Cholesky factor of Λ⁻¹ in this order is
bordered block-diagonal: the structured family contains the posterior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

DTYPE = torch.float64


@dataclass(frozen=True)
class Dims:
    N: int
    d_global: int = 2
    d_local: int = 2

    @property
    def d(self) -> int:
        return self.d_global + self.N * self.d_local


@dataclass(frozen=True)
class HierProblem:
    """Data (X, W, y) plus the exact posterior (μ, Λ) and the constants the exact KL needs."""

    dims: Dims
    X: torch.Tensor  # (N, J, d_G)
    W: torch.Tensor  # (N, J, d_L)
    y: torch.Tensor  # (N, J)
    Lam: torch.Tensor  # posterior precision (d, d)
    mu: torch.Tensor  # posterior mean (d,)
    logdet_Lam: float
    log_Z: float  # log p(y), including every constant of log_joint
    phi_t: torch.Tensor  # Φᵀ (d, NJ)
    y_flat: torch.Tensor  # (NJ,)

    @property
    def d(self) -> int:
        return self.dims.d

    @property
    def lambda_max(self) -> float:
        return float(torch.linalg.eigvalsh(self.Lam)[-1])

    @property
    def kl_floor_meanfield(self) -> float:
        """min over diagonal Gaussians of KL(q‖p) = ½(Σ log Λ_ii − log det Λ)."""
        return 0.5 * (float(torch.log(torch.diagonal(self.Lam)).sum()) - self.logdet_Lam)

    def design(self) -> torch.Tensor:
        """The dense design Φ (NJ × d); only for building Λ and for checks."""
        N, dG, dL = self.dims.N, self.dims.d_global, self.dims.d_local
        J = self.X.shape[1]
        phi = torch.zeros(N, J, self.d, dtype=DTYPE)
        phi[:, :, :dG] = self.X
        for n in range(N):
            phi[n, :, dG + n * dL : dG + (n + 1) * dL] = self.W[n]
        return phi.reshape(N * J, self.d)

    def log_joint(self, theta: torch.Tensor) -> torch.Tensor:
        """log p(θ, y) for a batch θ (S, d), all constants included.

        One matmul with the dense design Φ: at these sizes per-op overhead, not flops, sets the
        cost, and Φ's block structure would only add ops.
        """
        resid = self.y_flat - theta @ self.phi_t
        const = 0.5 * (self.d + self.y_flat.numel()) * math.log(2 * math.pi)
        return -0.5 * (theta * theta).sum(-1) - 0.5 * (resid * resid).sum(-1) - const

    def grad_log_joint(self, theta: torch.Tensor) -> torch.Tensor:
        """∇_θ log p(θ, y) = Φᵀ(y − Φθ) − θ, row by row for a batch θ (S, d)."""
        return (self.y_flat - theta @ self.phi_t) @ self.phi_t.T - theta

    def kl(self, m: torch.Tensor, C: torch.Tensor) -> float:
        """Exact KL(N(m, CCᵀ) ‖ N(μ, Λ⁻¹)); uses log|det C| so any square C is allowed."""
        with torch.no_grad():
            diff = m - self.mu
            trace = float((self.Lam @ C * C).sum())
            maha = float(diff @ self.Lam @ diff)
            log_abs_det = float(torch.linalg.slogdet(C)[1])
            return 0.5 * (trace + maha - self.d - self.logdet_Lam - 2.0 * log_abs_det)

    def elbo_exact(self, m: torch.Tensor, C: torch.Tensor) -> float:
        """E_q[log p(θ, y)] + H(q) in closed form (a check on log_joint and kl: = log Z − KL)."""
        with torch.no_grad():
            phi = self.design()
            S = C @ C.T
            resid = self.y.reshape(-1) - phi @ m
            e_logp = (
                -0.5 * (m @ m + torch.trace(S))
                - 0.5 * (resid @ resid + torch.trace(phi @ S @ phi.T))
                - 0.5 * (self.d + self.y.numel()) * math.log(2 * math.pi)
            )
            entropy = float(torch.linalg.slogdet(C)[1]) + 0.5 * self.d * (1 + math.log(2 * math.pi))
            return float(e_logp) + entropy


def make_problem(
    N: int, d_global: int = 2, d_local: int = 2, obs_per_group: int = 5, problem_seed: int = 0
) -> HierProblem:
    """Draw the data in the spec's order (X, W, β, z, noise) from one seeded torch Generator."""
    dims = Dims(N=N, d_global=d_global, d_local=d_local)
    g = torch.Generator().manual_seed(problem_seed)
    J = obs_per_group
    X = torch.randn(N, J, d_global, generator=g, dtype=DTYPE)
    W = torch.randn(N, J, d_local, generator=g, dtype=DTYPE)
    beta = torch.randn(d_global, generator=g, dtype=DTYPE)
    z = torch.randn(N, d_local, generator=g, dtype=DTYPE)
    noise = torch.randn(N, J, generator=g, dtype=DTYPE)
    y = X @ beta + torch.einsum("njl,nl->nj", W, z) + noise
    partial = HierProblem(dims, X, W, y, torch.eye(1), torch.zeros(1), 0.0, 0.0, torch.eye(1), y)
    phi = partial.design()
    Lam = torch.eye(dims.d, dtype=DTYPE) + phi.T @ phi
    chol = torch.linalg.cholesky(Lam)
    mu = torch.cholesky_solve((phi.T @ y.reshape(-1)).unsqueeze(1), chol).squeeze(1)
    logdet_Lam = float(2.0 * torch.log(torch.diagonal(chol)).sum())
    # log p(y) = log N(y; 0, I + ΦΦᵀ); by the matrix determinant lemma and Woodbury:
    # log det(I + ΦΦᵀ) = log det Λ and yᵀ(I + ΦΦᵀ)⁻¹y = yᵀy − yᵀΦμ.
    yv = y.reshape(-1)
    quad = float(yv @ yv - yv @ (phi @ mu))
    log_Z = -0.5 * (quad + logdet_Lam + yv.numel() * math.log(2 * math.pi))
    return HierProblem(dims, X, W, y, Lam, mu, logdet_Lam, log_Z, phi.T.contiguous(), yv.clone())
