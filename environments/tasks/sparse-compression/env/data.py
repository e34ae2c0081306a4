"""The source and the encoder (read-only: they define the problem).

x ∈ R^96 has i.i.d. Bernoulli-Gaussian coordinates: x_i = m_i * g_i / sqrt(p) with
m_i ~ Bernoulli(p = 0.2) and g_i ~ N(0, 1), so E x_i = 0 and E x_i^2 = 1.
The encoder is z = sign(B x) ∈ {-1, +1}^96 with sign(0) := +1 (so x = 0 encodes to all +1).
"""

import torch

from methods.sparse_autoencoder.codec import encode as _encode
from methods.sparse_autoencoder.data import sample

P, D, N_BITS = 0.2, 96, 96


def sample_x(n: int, generator: torch.Generator) -> torch.Tensor:
    """n samples (n, 96), float64."""
    return sample("bg", P, n, D, generator)


def encode(B: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """z = sign(B x) per row, sign(0) = +1; float tensor of ±1 with X's dtype."""
    return _encode(B.to(X.dtype), X)
