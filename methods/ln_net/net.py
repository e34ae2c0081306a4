"""The trained LN-Net: Linear(d→w), (L-1)×[Norm, Linear(w→w)], Norm, Linear(w→C)."""

from __future__ import annotations

import torch
from torch import nn

from methods.ln_net.ln import GroupLayerNorm


class LNNet(nn.Module):
    """L norm layers and L+1 linear layers with biases; ``groups=0`` replaces every norm by the
    identity, collapsing the net to one affine map (the linear baseline)."""

    def __init__(self, d: int, width: int, depth: int, n_classes: int, groups: int = 1,
                 eps: float = 1e-5) -> None:
        super().__init__()
        dims = [d] + [width] * depth
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.readout = nn.Linear(width, n_classes)
        self.norms = nn.ModuleList(
            GroupLayerNorm(width, groups, eps) if groups > 0 else nn.Identity()
            for _ in range(depth)
        )

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The representation entering the readout (after the last norm)."""
        for linear, norm in zip(self.linears, self.norms):
            x = norm(linear(x))
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.features(x))
