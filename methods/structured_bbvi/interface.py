"""The ``structured-bbvi`` task's family interface, run through the library's BBVI loop.

A family module defines ``init(d_global, d_local, N) -> dict[str, Tensor]`` (the trainable
tensors), ``location_scale(params) -> (m, C)`` with C a d×d matrix, and ``CONFIG``:
``optimizer`` (sgd | adam | adamw | rmsprop, with optional ``optimizer_kwargs``), ``lr``,
``schedule`` (constant | step | cosine over the cap, with optional ``schedule_kwargs``) and
``n_samples``. The runner owns log p and the ELBO, (1/S)Σ log p(m + C u_s) + log|det C|, with
gradients by autograd. log|det C| is ``slogdet``: C need not be triangular, so no shortcut
through its diagonal is safe (that would drop the gradient of entries that happen to be zero).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from methods.structured_bbvi.problem import DTYPE, HierProblem
from methods.structured_bbvi.vi import OPTIMIZERS, RunResult, fit

CAP = 20_000
TARGET_KL = 0.5
EVAL_EVERY = 100
SCHEDULES = ("constant", "step", "cosine")


class FamilyError(ValueError):
    """The family module broke the interface."""


class ModuleFamily:
    """Adapts ``init``/``location_scale`` to the loop's variational protocol."""

    def __init__(self, location_scale: Callable[[dict[str, torch.Tensor]], tuple[torch.Tensor, torch.Tensor]],
                 params: dict[str, torch.Tensor], d: int) -> None:
        if not isinstance(params, dict) or not params:
            raise FamilyError("init must return a non-empty dict of tensors")
        for name, value in params.items():
            if not isinstance(value, torch.Tensor) or value.dtype != DTYPE:
                raise FamilyError(f"init: parameter {name!r} must be a float64 tensor")
            value.requires_grad_(True)
        self.location_scale = location_scale
        self.params = params
        self.d = d
        self._check(*location_scale(params))

    def _check(self, m: torch.Tensor, C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(m, torch.Tensor) or m.shape != (self.d,):
            raise FamilyError(f"location_scale must return m of shape ({self.d},)")
        if not isinstance(C, torch.Tensor) or C.shape != (self.d, self.d):
            raise FamilyError(f"location_scale must return C of shape ({self.d}, {self.d})")
        return m, C

    def leaves(self) -> list[torch.Tensor]:
        return list(self.params.values())

    def elbo_terms(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m, C = self.location_scale(self.params)
        return m + u @ C.T, torch.linalg.slogdet(C)[1]

    def dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            m, C = self._check(*self.location_scale(self.params))
            return m.detach().to(DTYPE), C.detach().to(DTYPE)


def check_config(config: Any) -> dict[str, Any]:
    """Validate CONFIG; returns it with defaults filled in."""
    if not isinstance(config, dict):
        raise FamilyError("CONFIG must be a dict")
    allowed = {"optimizer", "lr", "schedule", "n_samples", "optimizer_kwargs", "schedule_kwargs"}
    extra = set(config) - allowed
    if extra:
        raise FamilyError(f"CONFIG: unknown keys {sorted(extra)}")
    out = {"schedule": "constant", "optimizer_kwargs": {}, "schedule_kwargs": {}, **config}
    if out.get("optimizer") not in OPTIMIZERS:
        raise FamilyError(f"CONFIG['optimizer'] must be one of {sorted(OPTIMIZERS)}")
    if out["schedule"] not in SCHEDULES:
        raise FamilyError(f"CONFIG['schedule'] must be one of {list(SCHEDULES)}")
    lr, n = out.get("lr"), out.get("n_samples")
    if not isinstance(lr, (int, float)) or not 0 < lr < 10:
        raise FamilyError("CONFIG['lr'] must be a number in (0, 10)")
    if not isinstance(n, int) or not 1 <= n <= 256:
        raise FamilyError("CONFIG['n_samples'] must be an int in 1..256")
    return out


def make_scheduler(opt: torch.optim.Optimizer, config: dict[str, Any], cap: int):
    kwargs = dict(config["schedule_kwargs"])
    if config["schedule"] == "step":
        return torch.optim.lr_scheduler.StepLR(
            opt, step_size=int(kwargs.get("step_size", 5000)), gamma=float(kwargs.get("gamma", 0.5))
        )
    if config["schedule"] == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=cap, eta_min=float(kwargs.get("eta_min", 0.0))
        )
    return None


def run_family_module(
    module: ModuleType,
    problem: HierProblem,
    mc_seed: int,
    cap: int = CAP,
    time_limit: float | None = 60.0,
) -> tuple[RunResult, int]:
    """Run one problem; returns the result and the grad evaluations it counts for.

    A miss (no check at KL ≤ 0.5 within the cap or the time limit) counts 2 × cap × n_samples.
    """
    config = check_config(getattr(module, "CONFIG", None))
    torch.manual_seed(mc_seed)  # for families whose init draws random numbers
    dims = problem.dims
    q = ModuleFamily(module.location_scale, module.init(dims.d_global, dims.d_local, dims.N), problem.d)
    opt = OPTIMIZERS[config["optimizer"]](q.leaves(), lr=config["lr"], **config["optimizer_kwargs"])
    result = fit(
        problem,
        q,
        opt,
        n_samples=config["n_samples"],
        iters=cap,
        eval_every=EVAL_EVERY,
        target=TARGET_KL,
        mc_seed=mc_seed,
        scheduler=make_scheduler(opt, config, cap),
        time_limit=time_limit,
    )
    n = config["n_samples"]
    evals = result.iters_to_eps * n if result.iters_to_eps is not None else 2 * cap * n
    return result, evals
