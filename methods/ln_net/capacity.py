"""Fitting random labels with a trained LN-Net, LN-G net, or the same net without norms."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from methods.ln_net.scatter import lssr
from methods.ln_net.net import LNNet


def random_labels(
    m: int, d: int, n_classes: int, data_seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """X ~ N(0, I_d), labels uniform on {0..C-1} and independent of X (methods2's seeding:
    torch.manual_seed(0) for data seed 0, else 100 + seed)."""
    torch.manual_seed(0 if data_seed == 0 else 100 + data_seed)
    return torch.randn(m, d), torch.randint(0, n_classes, (m,))


@dataclass
class FitResult:
    train_acc: float
    final_loss: float
    n_params: int
    lssr_last_hidden: float
    warnings: list[str]


def fit_random_labels(
    X: torch.Tensor, y: torch.Tensor, width: int, depth: int, groups: int, steps: int = 800,
    lr: float = 3e-3, eps: float = 1e-5, seed: int = 0,
) -> FitResult:
    """Full-batch Adam on cross-entropy from PyTorch's default init under manual_seed(seed)."""
    n_classes = int(y.max()) + 1
    torch.manual_seed(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = LNNet(X.shape[1], width, depth, max(n_classes, 2), groups, eps)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    loss = torch.zeros(())
    for _ in range(steps):
        loss = F.cross_entropy(net(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = float((net(X).argmax(dim=1) == y).float().mean())
        H = net.features(X).double().numpy()
        final = float(F.cross_entropy(net(X), y))
    return FitResult(
        train_acc=acc,
        final_loss=final,
        n_params=sum(p.numel() for p in net.parameters()),
        lssr_last_hidden=lssr(H, y.numpy()),
        warnings=[str(w.message) for w in caught],
    )
