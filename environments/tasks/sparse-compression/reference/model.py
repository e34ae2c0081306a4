"""Reference decoder: the linear decoder followed by the Bernoulli-Gaussian posterior mean.

Bussgang: each coordinate of y = A z behaves like c·x + σ·w with w ~ N(0, 1) independent of x,
so the MMSE estimate of x_i from y_i alone is the spike-and-slab posterior mean
E[x | y] = π₁(y) · (c/p) / (c²/p + σ²) · y, with π₁(y) the posterior probability that x ≠ 0
(``methods.sparse_autoencoder.decoders.denoise``, written here in tensor ops of the buffers c
and σ² so that the forward pass exports as a graph: eval runs the exported graph).
"""

import torch
from torch import nn

P = 0.2


def _normal_pdf(y: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * y * y / var) / torch.sqrt(2.0 * torch.pi * var)


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(96, 96, bias=False)
        self.register_buffer("c", torch.tensor(1.0))
        self.register_buffer("sigma2", torch.tensor(1.0))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        y = self.linear(z.to(self.linear.weight.dtype)).double()
        c, sigma2 = self.c.double(), self.sigma2.double()
        slab = c * c / P + sigma2
        on = P * _normal_pdf(y, slab)
        off = (1.0 - P) * _normal_pdf(y, sigma2)
        return (on / (on + off) * (c / P) / slab * y).to(z.dtype)
