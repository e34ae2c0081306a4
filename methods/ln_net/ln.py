"""LayerNorm without affine, and its grouped form LN-G."""

from __future__ import annotations

import warnings

import torch
from torch import nn


def layer_norm(z: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """(z - mean) / sqrt(population variance + eps) over the last dimension."""
    centred = z - z.mean(dim=-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(dim=-1, keepdim=True) + eps)


def group_layer_norm(z: torch.Tensor, groups: int, eps: float = 1e-5) -> torch.Tensor:
    """LN applied inside ``groups`` contiguous groups of the last dimension (groups=1 is LN)."""
    *lead, width = z.shape
    if width % groups:
        raise ValueError(f"groups: {groups} does not divide width {width}")
    return layer_norm(z.reshape(*lead, groups, width // groups), eps).reshape(*lead, width)


class GroupLayerNorm(nn.Module):
    """LN-G with no affine (the following linear layer absorbs any per-feature affine)."""

    def __init__(self, width: int, groups: int = 1, eps: float = 1e-5) -> None:
        super().__init__()
        if groups < 1 or width % groups:
            raise ValueError(f"groups: {groups} does not divide width {width}")
        if width // groups < 3:
            warnings.warn(f"group size {width // groups} < 3: LN of 2 numbers is ±(1,-1), so "
                          "the layer is piecewise constant and its gradient is zero almost "
                          "everywhere", stacklevel=2)
        self.groups, self.eps = groups, eps

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return group_layer_norm(z, self.groups, self.eps)
