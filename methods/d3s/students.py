"""The fixed student protocol: plain MLPs trained full-batch on the distilled set."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from methods.d3s.models import PlainMLP, accuracy


def train_student(X: torch.Tensor, targets: torch.Tensor, seed: int, epochs: int = 300, lr: float = 1e-3) -> PlainMLP:
    """``targets``: int labels (CE) or rows of probabilities (cross-entropy −Σ p log softmax)."""
    torch.manual_seed(seed)
    net = PlainMLP()
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    soft = targets.dtype.is_floating_point
    for _ in range(epochs):
        opt.zero_grad(set_to_none=True)
        logits = net(X)
        if soft:
            loss = -(targets * F.log_softmax(logits, dim=1)).sum(1).mean()
        else:
            loss = F.cross_entropy(logits, targets)
        loss.backward()
        opt.step()
    return net


def student_accuracies(X: torch.Tensor, targets: torch.Tensor, X_eval: torch.Tensor, y_eval: torch.Tensor,
                       seeds: list[int], epochs: int = 300, lr: float = 1e-3,
                       X_extra: torch.Tensor | None = None, y_extra: torch.Tensor | None = None,
                       ) -> tuple[list[float], list[float] | None]:
    """Accuracy of each seed's student on (X_eval, y_eval), and on (X_extra, y_extra) if given."""
    accs, extra = [], ([] if X_extra is not None else None)
    for seed in seeds:
        net = train_student(X, targets, seed, epochs, lr)
        accs.append(accuracy(net, X_eval, y_eval))
        if extra is not None:
            extra.append(accuracy(net, X_extra, y_extra))
    return accs, extra
