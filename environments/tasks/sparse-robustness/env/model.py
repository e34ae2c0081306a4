"""The classifier the task scores: Net() must take (N, 1, 8, 8) images in [0, 1] and return (N, 10) logits."""

import torch
from torch import nn


class Net(nn.Module):
    """A 64-256-256-10 ReLU MLP (about 85k parameters)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64, 256),
            nn.ReLU(),
            nn.Linear(256, 256),
            nn.ReLU(),
            nn.Linear(256, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
