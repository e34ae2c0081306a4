"""Unit-variance sparse sources: Bernoulli-Gaussian, sparse Rademacher, Gaussian."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch

DataKind = Literal["bg", "sparse_rademacher", "gaussian"]
DTYPE = torch.float64


def generator(seed: int, stream: int) -> torch.Generator:
    """An independent torch stream per (seed, purpose): train, refit, fit and test never share."""
    state = np.random.SeedSequence([seed, stream]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state) & ((1 << 63) - 1))


def sample(kind: DataKind, p: float, n: int, d: int, gen: torch.Generator) -> torch.Tensor:
    """(n, d) samples with E x_i = 0 and E x_i² = 1.

    ``bg``: x_i = m_i g_i / √p with m_i ~ Bern(p), g_i ~ N(0,1); ``sparse_rademacher``:
    x_i = s_i v_i / √p with s_i ~ Bern(p), v_i = ±1; ``gaussian``: ``bg`` with p = 1.
    """
    if kind == "gaussian":
        return torch.randn(n, d, generator=gen, dtype=DTYPE)
    mask = (torch.rand(n, d, generator=gen, dtype=DTYPE) < p).to(DTYPE)
    if kind == "bg":
        values = torch.randn(n, d, generator=gen, dtype=DTYPE)
    else:
        values = torch.where(torch.rand(n, d, generator=gen, dtype=DTYPE) < 0.5, 1.0, -1.0)
        values = values.to(DTYPE)
    return mask * values / math.sqrt(p)
