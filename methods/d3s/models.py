"""The MLPs: BN teachers (frozen, eval mode), plain students, and the teachers' training."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Teacher(nn.Module):
    """64 → 128 → BN → ReLU → 128 → BN → ReLU → 10 (``bn=False`` drops the BatchNorms)."""

    def __init__(self, bn: bool = True, width: int = 128) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, width)
        self.bn1 = nn.BatchNorm1d(width) if bn else nn.Identity()
        self.fc2 = nn.Linear(width, width)
        self.bn2 = nn.BatchNorm1d(width) if bn else nn.Identity()
        self.head = nn.Linear(width, 10)

    def hidden(self, x: torch.Tensor, post_relu: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(feature of layer 1, feature of layer 2, logits): post-BN pre-ReLU, or post-ReLU."""
        a1 = self.bn1(self.fc1(x))
        h1 = torch.relu(a1)
        a2 = self.bn2(self.fc2(h1))
        h2 = torch.relu(a2)
        logits = self.head(h2)
        return (h1, h2, logits) if post_relu else (a1, a2, logits)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden(x)[2]


class PlainMLP(nn.Module):
    """64 → 128 → ReLU → 128 → ReLU → 10: the students and DM's random embedders."""

    def __init__(self, width: int = 128) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, width)
        self.fc2 = nn.Linear(width, width)
        self.head = nn.Linear(width, 10)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The last hidden ReLU output h₂."""
        return torch.relu(self.fc2(torch.relu(self.fc1(x))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x))


def train_teacher(X: torch.Tensor, y: torch.Tensor, seed: int, bn: bool = True,
                  steps: int = 400, lr: float = 1e-3) -> Teacher:
    """Full-batch Adam with BN in train mode; returned frozen, in eval mode (running stats)."""
    torch.manual_seed(seed)
    net = Teacher(bn=bn)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    net.train()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(X), y).backward()
        opt.step()
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net


def accuracy(net: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((net(X).argmax(1) == y).float().mean())
