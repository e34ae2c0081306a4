"""The decoder: any deterministic function of the 96 bits z alone (at most 10^6 parameters).

Decoder() is built with no arguments and its state_dict is loaded from model.pt; forward gets
z as a float32 tensor (N, 96) of ±1 and returns x̂ (N, 96). Baseline: a linear map, no bias.
"""

import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(96, 96, bias=False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.linear(z)
