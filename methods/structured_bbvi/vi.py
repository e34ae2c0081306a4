"""The BBVI loop: reparameterised ELBO gradients, a torch optimiser, exact-KL checks.

Each iteration draws u ~ N(0, I) (S × d) from one seeded Generator, so every step size of a
sweep sees the same Monte Carlo noise, and maximises
    ELBO(m, C) ≈ (1/S) Σ_s log p(m + C u_s, y) + log|det C|
(the Gaussian entropy up to a constant). Every ``eval_every`` iterations the exact KL to the
posterior is computed; the run stops at the first check with KL ≤ target, or when the KL is no
longer finite. The loop is family-agnostic: anything with ``elbo_terms``, ``dense`` and
``leaves`` works (gradients by autograd), which is how the task's eval runs an actor's family
through it; a family with ``neg_elbo_grad`` supplies the same pathwise gradient directly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from methods.structured_bbvi.problem import DTYPE, HierProblem


class Variational(Protocol):
    def leaves(self) -> list[torch.Tensor]: ...

    def elbo_terms(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(m + C·u, log|det C|), differentiable in the leaves."""
        ...

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]: ...


@dataclass
class RunResult:
    """One optimisation run: iterations to the target (None if never) and the KL curve."""

    iters_to_eps: int | None
    final_kl: float
    min_kl: float
    nonfinite: bool
    iters_run: int
    curve: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0


OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
}


def make_optimizer(
    name: str, params: list[torch.Tensor], lr: float, **kwargs: object
) -> torch.optim.Optimizer:
    """A torch optimiser from the menu, torch defaults unless ``kwargs`` say otherwise."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer: unknown optimiser {name!r}; choose one of {sorted(OPTIMIZERS)}")
    return OPTIMIZERS[name](params, lr=lr, **kwargs)


def fit(
    problem: HierProblem,
    q: Variational,
    optimizer: torch.optim.Optimizer,
    *,
    n_samples: int = 8,
    iters: int = 5000,
    eval_every: int = 100,
    target: float = 0.5,
    mc_seed: int = 0,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    after_step: Callable[[], None] | None = None,
    time_limit: float | None = None,
    stall_checks: int | None = None,
) -> RunResult:
    """Maximise the ELBO until KL ≤ ``target`` at a check, or ``iters`` iterations.

    ``time_limit`` is in seconds of this process's CPU time (checked at each KL check), so a
    loaded machine does not cut a run short. ``stall_checks`` (off by default; the benchmark's
    pruning) gives up once that many checks in a row fail to close 1% of the best KL's gap to
    the target.
    """
    start = time.perf_counter()
    cpu_start = time.process_time()
    gen = torch.Generator().manual_seed(mc_seed)
    d = problem.d
    curve: list[tuple[int, float]] = []
    kl = problem.kl(*q.dense())
    min_kl = kl
    stalled = 0
    manual = getattr(q, "neg_elbo_grad", None)
    leaves = q.leaves()
    for it in range(1, iters + 1):
        u = torch.randn(n_samples, d, generator=gen, dtype=DTYPE)
        if manual is not None:
            leaves[0].grad = manual(problem, u)
        else:
            theta, log_abs_det = q.elbo_terms(u)
            elbo = problem.log_joint(theta).mean() + log_abs_det
            optimizer.zero_grad(set_to_none=True)
            (-elbo).backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if after_step is not None:
            after_step()
        if it % eval_every == 0 or it == iters:
            kl = problem.kl(*q.dense())
            curve.append((it, kl))
            if not math.isfinite(kl):
                return RunResult(None, kl, min_kl, True, it, curve, time.perf_counter() - start)
            stalled = 0 if kl < min_kl - 0.01 * (min_kl - target) else stalled + 1
            min_kl = min(min_kl, kl)
            if it % eval_every == 0 and kl <= target:
                return RunResult(it, kl, min_kl, False, it, curve, time.perf_counter() - start)
            if time_limit is not None and time.process_time() - cpu_start > time_limit:
                break
            if stall_checks is not None and stalled >= stall_checks:
                break
    return RunResult(None, kl, min_kl, False, it, curve, time.perf_counter() - start)
