"""The one-hidden-layer ReLU network and its training step (online SGD, logistic loss)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class Net(nn.Module):
    """f(x) = w₂ᵀReLU(W₁x + b₁) + b₂ with PyTorch's default init."""

    def __init__(self, dim: int = 20, width: int = 128) -> None:
        super().__init__()
        self.hidden = nn.Linear(dim, width)
        self.out = nn.Linear(width, 1)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.hidden(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(x)).squeeze(-1)


def make_net(dim: int, width: int, seed: int) -> Net:
    torch.manual_seed(seed)
    return Net(dim, width)


def logistic_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """mean softplus(−y·f(x))."""
    return F.softplus(-y * logits).mean()


def sgd_step(net: Net, x: torch.Tensor, y: torch.Tensor, lr: float) -> None:
    """Plain SGD (no momentum, no weight decay) on the logistic loss of one batch.

    The gradient is written out (∂ℓ/∂f = −y·σ(−y f)/B, then the two layers' chain rule): it is
    autograd's gradient (a test checks it) at under half the per-step cost, and tens of
    thousands of steps per experiment make that overhead the run time.
    """
    with torch.no_grad():
        W1, b1 = net.hidden.weight, net.hidden.bias
        W2, b2 = net.out.weight, net.out.bias
        h = torch.addmm(b1, x, W1.T).clamp_(min=0)
        f = torch.addmm(b2, h, W2.T).squeeze(1)
        g = (-y * torch.sigmoid(-y * f)).div_(x.shape[0]).unsqueeze(1)  # (B, 1)
        dh = (g @ W2).mul_(h > 0)
        W2.sub_(g.T @ h, alpha=lr)
        b2.sub_(g.sum(0), alpha=lr)
        W1.sub_(dh.T @ x, alpha=lr)
        b1.sub_(dh.sum(0), alpha=lr)
