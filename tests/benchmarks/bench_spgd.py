"""Benchmark for sparse-PGD: cost per iteration and robust accuracy at k = 1..5.

Run: ``python tests/benchmarks/bench_spgd.py`` (a few minutes on two cores). Prints
1. seconds per sPGD iteration (forward, backward, update, batch 256, no sample leaving) on the
   digits MLP and on the small CNN, for both gradient variants, with the bare forward+backward
   time of each model as the yardstick (the ratio is the attack's own overhead);
2. robust accuracy (%) of a standard digits MLP on the 540 test images under sPGD (ensemble,
   100 iterations), Sparse-RS (300 queries), sAA (100/100/300) and random l0 noise (100 draws),
   at k = 1..5.
The authors' implementation is not available offline, so no ratio to it is printed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from methods.sparse_pgd.data import digits_split  # noqa: E402
from methods.sparse_pgd.evaluate import AttackConfig, predict, run_attack  # noqa: E402
from methods.sparse_pgd.models import DigitsMLP, SmallCNN, train_standard  # noqa: E402
from methods.sparse_pgd.spgd import spgd_batch  # noqa: E402
from methods.sparse_pgd.streams import SampleStreams  # noqa: E402

BATCH = 256
ITERS = 50


class _Unfoolable(torch.nn.Module):
    """Adds a constant to the true class's logit: the gradients (and so the attack's work) are
    unchanged, but no sample is ever fooled, so every iteration runs on the full batch."""

    def __init__(self, model: torch.nn.Module, y: torch.Tensor) -> None:
        super().__init__()
        self.model = model
        self.bonus = 1e4 * torch.nn.functional.one_hot(y, 10).float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x) + self.bonus


def seconds_per_iteration(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, projected: bool) -> float:
    """Wall seconds per sPGD iteration (forward, custom backward, mask and magnitude update,
    restarts) on a full batch at k = 3."""
    streams = SampleStreams(0, torch.arange(len(x)))
    start = time.perf_counter()
    spgd_batch(_Unfoolable(model, y).eval(), x, y, 3, streams, iters=ITERS, projected=projected)
    return (time.perf_counter() - start) / (ITERS + 1)


def bare_forward_backward(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, reps: int = 50) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        xg = x.clone().requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(model(xg), y, reduction="sum")
        torch.autograd.grad(loss, [xg])
    return (time.perf_counter() - start) / reps


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    X_tr, y_tr, X_te, y_te = (torch.from_numpy(a) for a in digits_split())
    mlp = train_standard(DigitsMLP(), X_tr, y_tr, epochs=30, seed=0)
    cnn = train_standard(SmallCNN(), X_tr, y_tr, epochs=5, seed=0)

    print(f"== seconds per sPGD iteration, batch {BATCH}, k = 3 (bare f+b: one plain input-gradient pass) ==")
    print(f"{'model':<10}{'variant':<14}{'s/iter':>10}{'bare f+b':>10}{'ratio':>8}")
    for name, model in (("MLP", mlp), ("CNN", cnn)):
        model.eval()
        x, y = X_te[:BATCH], y_te[:BATCH]
        bare = bare_forward_backward(model, x, y)
        for variant, projected in (("unprojected", False), ("projected", True)):
            s = seconds_per_iteration(model, x, y, projected)
            print(f"{name:<10}{variant:<14}{s:>10.5f}{bare:>10.5f}{s / bare:>8.2f}")

    print()
    print(f"== robust accuracy (%) of the standard MLP, n = {len(X_te)}, "
          f"clean {100 * float((predict(mlp, X_te) == y_te).float().mean()):.1f} ==")
    methods = [
        ("sPGD ens (100 it)", "spgd_ens"),
        ("Sparse-RS (300 q)", "rs"),
        ("sAA (100/100/300)", "saa"),
        ("random noise (100)", "noise"),
    ]
    print(f"{'k':<4}" + "".join(f"{label:>20}" for label, _ in methods) + f"{'seconds':>10}")
    for k in range(1, 6):
        start = time.perf_counter()
        row = [run_attack(mlp, X_te, y_te, m, AttackConfig(k=k, rs_queries=300)).robust_acc for _, m in methods]
        print(f"{k:<4}" + "".join(f"{100 * r:>20.1f}" for r in row) + f"{time.perf_counter() - start:>10.1f}")


if __name__ == "__main__":
    main()
