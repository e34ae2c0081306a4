"""The partially observable GLM (POGLM): basis, history filters, rates, likelihoods, generators.

Li, Li, Wang & Wu, ICML 2024 (arXiv 2402.01263; authors' code github.com/JerrySoybean/poglm
@ebecac6, ``model.py``). Neurons are ordered visible first, then hidden. Spike counts
s_{t,n} in {0, 1, 2, ...}; history c_{t,n} = sum_{j=1..5} phi_j s_{t-j,n} (zeros before t = 1) with
phi_j proportional to exp(-0.25 j) and sum phi = 1; rate lambda = sigmoid(b + W c) < 1 per bin.

Everything is float64: the tensors are tiny and the Concrete densities need the range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

DTYPE = torch.float64
BASIS_LEN = 5


def basis(length: int = BASIS_LEN, decay: float = 0.25) -> torch.Tensor:
    """phi_j for lags j = 1..length, normalised to sum to 1."""
    phi = torch.exp(-decay * torch.arange(1, length + 1, dtype=DTYPE))
    return phi / phi.sum()


def history(s: torch.Tensor, phi: torch.Tensor | None = None) -> torch.Tensor:
    """Forward filter c_t = sum_j phi_j s_{t-j} over (..., T, N); depends on s_{<t} only."""
    phi = basis() if phi is None else phi
    T = s.shape[-2]
    c = torch.zeros_like(s)
    for j in range(1, len(phi) + 1):
        if j < T:
            c[..., j:, :] += phi[j - 1] * s[..., : T - j, :]
    return c


def future(s: torch.Tensor, phi: torch.Tensor | None = None) -> torch.Tensor:
    """Backward filter cbar_t = sum_j phi_j s_{t+j}; depends on s_{>t} only (FB posterior).

    The forward filter run on time reversed: the same sum in the same order, so one loop."""
    return history(s.flip(-2), phi).flip(-2)


@dataclass
class GLMParams:
    """theta = (W (N, N) all-to-all incl. self-connections, b (N,)); ``n_vis`` visible first."""

    W: torch.Tensor
    b: torch.Tensor
    n_vis: int

    @property
    def n(self) -> int:
        return int(self.b.shape[0])

    @property
    def n_hid(self) -> int:
        return self.n - self.n_vis

    def rates(self, s: torch.Tensor) -> torch.Tensor:
        """lambda_{t,n} = sigmoid(b_n + sum_m W_nm c_{t,m}) for full spike trains (..., T, N)."""
        return torch.sigmoid(self.b + history(s) @ self.W.T)

    def to_numpy(self) -> dict[str, np.ndarray]:
        return {"W": self.W.detach().numpy(), "b": self.b.detach().numpy(), "n_vis": np.int64(self.n_vis)}


def poisson_logpmf(k: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    return k * torch.log(lam) - lam - torch.lgamma(k + 1.0)


def simulate(params: GLMParams, n_seq: int, T: int, gen: torch.Generator) -> torch.Tensor:
    """Draw (n_seq, T, N) spike counts from the GLM, one time bin at a time."""
    phi = basis()
    s = torch.zeros(n_seq, T, params.n, dtype=DTYPE)
    for t in range(T):
        lo = max(0, t - len(phi))
        past = s[:, lo:t, :]  # (n_seq, <=5, N), oldest first
        w = phi[: t - lo].flip(0)  # lag t-lo .. 1
        c = (past * w[None, :, None]).sum(dim=1) if t > 0 else torch.zeros(n_seq, params.n, dtype=DTYPE)
        lam = torch.sigmoid(params.b + c @ params.W.T)
        s[:, t, :] = torch.poisson(lam, generator=gen)
    return s


Generator = Literal["strong_drive", "paper"]


def draw_params(kind: Generator, n_vis: int, n_hid: int, gen: torch.Generator) -> GLMParams:
    """Ground-truth parameters.

    ``paper``: W ~ U(-2, 2), b ~ U(-0.5, 0.5) (the paper's synthetic set).
    ``strong_drive`` (the report's; only partly specified): draw the paper's W and b, then set
    every visible<-hidden weight to +-3 with a random sign and every visible bias to -1.5. The
    hidden biases and the hidden<-* and visible<-visible weights keep the paper's draws.
    """
    n = n_vis + n_hid
    W = torch.rand(n, n, generator=gen, dtype=DTYPE) * 4.0 - 2.0
    b = torch.rand(n, generator=gen, dtype=DTYPE) - 0.5
    if kind == "strong_drive":
        signs = torch.where(torch.rand(n_vis, n_hid, generator=gen, dtype=DTYPE) < 0.5, -1.0, 1.0)
        W[:n_vis, n_vis:] = 3.0 * signs
        b[:n_vis] = -1.5
    elif kind != "paper":
        raise ValueError(f"generator: unknown generator {kind!r}")
    return GLMParams(W=W, b=b, n_vis=n_vis)


@dataclass
class Dataset:
    params: GLMParams
    train: torch.Tensor  # (S, T, N) full spike trains (visible first)
    test: torch.Tensor

    @property
    def n_vis(self) -> int:
        return self.params.n_vis


def generate(
    kind: Generator = "strong_drive",
    n_train: int = 40,
    n_test: int = 20,
    T: int = 100,
    n_vis: int = 3,
    n_hid: int = 2,
    seed: int = 0,
) -> Dataset:
    """Parameters and spike trains (visible and hidden) from one seed."""
    gen = torch.Generator().manual_seed(seed)
    params = draw_params(kind, n_vis, n_hid, gen)
    spikes = simulate(params, n_train + n_test, T, gen)
    return Dataset(params=params, train=spikes[:n_train], test=spikes[n_train:])
