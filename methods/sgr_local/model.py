"""The L-module MLP with one auxiliary head per module."""

from __future__ import annotations

import torch
from torch import nn


class LocalNet(nn.Module):
    """h_l = ReLU(W_l h_{l-1} + b_l) (plus h_{l-1} when ``residual`` and shapes match); head g_l.

    The network's prediction is g_L(h_L). Built under ``torch.manual_seed(seed)`` with PyTorch's
    default initialisation, modules first and heads after, so BP, local and SGR runs with one
    seed start from identical weights (BP just never uses heads 1..L-1).
    """

    def __init__(self, n_in: int, width: int, depth: int, n_classes: int,
                 residual: bool = False, seed: int | None = None) -> None:
        super().__init__()
        if seed is not None:
            torch.manual_seed(seed)
        self.blocks = nn.ModuleList(
            nn.Linear(n_in if i == 0 else width, width) for i in range(depth)
        )
        self.heads = nn.ModuleList(nn.Linear(width, n_classes) for _ in range(depth))
        self.residual = residual

    @property
    def depth(self) -> int:
        return len(self.blocks)

    def block(self, index: int, h: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.blocks[index](h))
        if self.residual and out.shape == h.shape:
            out = out + h
        return out

    def module_parameters(self, index: int) -> list[nn.Parameter]:
        """(θ_l, g_l): the only parameters module ``index``'s local loss may touch."""
        return [*self.blocks[index].parameters(), *self.heads[index].parameters()]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(self.depth):
            x = self.block(i, x)
        return self.heads[-1](x)
