"""Boolean data with a core parity label and a spurious parity that agrees with it w.p. λ.

x = [x_c, x_s] ∈ {±1}^{n_c + n_s}. The label is the degree-k_c parity of the first k_c core bits.
The spurious target y_s equals y with probability λ (else −y), and x_s is uniform on
{f_s(x_s) = y_s}, f_s the degree-k_s parity of the first k_s spurious bits. Sampled exactly by
drawing x_s uniformly and flipping x_{s,1} wherever f_s(x_s) ≠ y_s (flipping one bit of the parity
toggles it, and the map is a bijection between the two halves of the cube).

The λ convention (P(y_s = y) = λ) follows the authors' dataset code (its ``c``); the paper's text
was not read. Only parities are implemented: the staircase functions are unverified.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class BooleanTask:
    n_core: int = 10
    n_spur: int = 10
    k_core: int = 3
    k_spur: int = 1

    @property
    def dim(self) -> int:
        return self.n_core + self.n_spur


@dataclass(frozen=True)
class Batch:
    """x float32 (n, n_c + n_s) in {±1}; y and y_s float32 (n,) in {±1}."""

    x: torch.Tensor
    y: torch.Tensor
    y_spur: torch.Tensor

    @property
    def group(self) -> torch.Tensor:
        """G = 2·[y = +1] + [y_s = +1]: 0 = (y−, s−), 1 = (y−, s+), 2 = (y+, s−), 3 = (y+, s+)."""
        return 2 * (self.y > 0).long() + (self.y_spur > 0).long()


def parity(bits: torch.Tensor, k: int) -> torch.Tensor:
    return bits[:, :k].prod(dim=1)


def sample(task: BooleanTask, n: int, lam: float, gen: torch.Generator) -> Batch:
    """Draw order (fixed by the spec): x_c (randint), the λ-coin (rand), x_s (randint)."""
    x_c = torch.randint(0, 2, (n, task.n_core), generator=gen).float() * 2 - 1
    coin = torch.rand(n, generator=gen) < lam
    x_s = torch.randint(0, 2, (n, task.n_spur), generator=gen).float() * 2 - 1
    y = parity(x_c, task.k_core)
    y_spur = torch.where(coin, y, -y)
    x_s[:, 0] *= parity(x_s, task.k_spur) * y_spur  # flip bit 1 where f_s(x_s) ≠ y_s
    return Batch(x=torch.cat([x_c, x_s], dim=1), y=y, y_spur=y_spur)
