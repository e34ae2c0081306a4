"""The ``spurious-features`` task's data interface: a budgeted, coordinate-permuted biased stream.

The permutation hides which coordinates are core and which spurious, so a solution cannot
hard-code positions; it does not stop a method from finding them (the task's rules forbid
masking or reweighting input coordinates, which review checks).
"""

from __future__ import annotations

import torch

from methods.spurious_boolean.data import Batch, BooleanTask, sample

TASK = BooleanTask(n_core=10, n_spur=10, k_core=3, k_spur=1)
LAM = 0.95
BUDGET = 8000 * 64


class BudgetExceeded(RuntimeError):
    """The training code asked the stream for more samples than the budget allows."""


def permute(batch: Batch, permutation: torch.Tensor) -> Batch:
    return Batch(x=batch.x[:, permutation], y=batch.y, y_spur=batch.y_spur)


class Stream:
    """``stream(n) -> (x, y)``: n fresh biased samples, x float32 in {±1}^20, coordinates permuted."""

    def __init__(self, seed: int, permutation: torch.Tensor, budget: int = BUDGET,
                 task: BooleanTask = TASK, lam: float = LAM) -> None:
        self._gen = torch.Generator().manual_seed(seed)
        self._perm = permutation
        self._task = task
        self._lam = lam
        self.budget = budget
        self.used = 0

    def __call__(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        n = int(n)
        if n < 1:
            raise ValueError("stream(n) needs n >= 1")
        if self.used + n > self.budget:
            raise BudgetExceeded(f"stream budget of {self.budget} samples exceeded")
        self.used += n
        batch = permute(sample(self._task, n, self._lam, self._gen), self._perm)
        return batch.x, batch.y


def balanced_batch(seed: int, permutation: torch.Tensor, n: int, task: BooleanTask = TASK) -> Batch:
    """λ = 0.5 samples (all four groups equally likely), coordinates permuted."""
    return permute(sample(task, n, 0.5, torch.Generator().manual_seed(seed)), permutation)


def permutation_from_seed(seed: int, dim: int = TASK.dim) -> torch.Tensor:
    return torch.randperm(dim, generator=torch.Generator().manual_seed(seed))
