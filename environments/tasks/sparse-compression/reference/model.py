"""Reference decoder: the linear decoder followed by the Bernoulli-Gaussian posterior mean.

Bussgang: each coordinate of y = A z behaves like c·x + σ·w with w ~ N(0, 1) independent of x,
so the MMSE estimate of x_i from y_i alone is the spike-and-slab posterior mean
E[x | y] = π₁(y) · (c/p) / (c²/p + σ²) · y, with π₁(y) the posterior probability that x ≠ 0.
"""

import torch
from torch import nn

from methods.sparse_autoencoder.decoders import denoise

P = 0.2


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(96, 96, bias=False)
        self.register_buffer("c", torch.tensor(1.0))
        self.register_buffer("sigma2", torch.tensor(1.0))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        y = self.linear(z.to(self.linear.weight.dtype)).double()
        return denoise(y, "bg", P, float(self.c), float(self.sigma2)).to(z.dtype)
