"""Robust-accuracy evaluation: batching, the sPGD ensemble and the sAA cascade.

Every attack here sees only clean-correct samples; a sample misclassified at x counts as not
robust (``success`` True, ``x_adv`` = x). ``success[i]`` always equals one fresh forward pass on
the returned ``x_adv[i]`` (argmax != y), and ``x_adv`` changes at most k pixels of x.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import torch
from torch import nn

from methods.sparse_pgd.baselines import random_noise_batch, saliency_batch
from methods.sparse_pgd.sparse_rs import sparse_rs_batch
from methods.sparse_pgd.spgd import LossKind, spgd_batch
from methods.sparse_pgd.streams import SampleStreams

Method = Literal["spgd", "spgd_proj", "spgd_ens", "rs", "saa", "saliency", "noise"]
BatchAttack = Callable[..., tuple[torch.Tensor, torch.Tensor]]


@dataclass
class AttackConfig:
    """Settings shared by every attack (defaults: the tool's, not the paper's 10k budgets)."""

    k: int
    iters: int = 100
    rs_queries: int = 1000
    eps: float = 1.0
    alpha: float = 0.25
    beta: float = 0.25
    patience: int = 3
    loss: LossKind = "ce"
    seed: int = 0
    batch_size: int = 512
    noise_draws: int = 100


@dataclass
class AttackResult:
    x_adv: torch.Tensor
    success: torch.Tensor  # bool (N,): not robust (misclassified at x or fooled)
    stages: dict[str, int] = field(default_factory=dict)  # survivors after each stage

    @property
    def robust_acc(self) -> float:
        return float((~self.success).float().mean().item())


@torch.no_grad()
def predict(model: nn.Module, X: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
    model.eval()
    return torch.cat([model(X[i : i + batch_size]).argmax(dim=1) for i in range(0, len(X), batch_size)])


def l0_pixels(x_adv: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Per-sample number of pixels (i, j) where any channel changed."""
    return ((x_adv - x).abs().amax(dim=1) > 0).flatten(1).sum(dim=1)


def _run_batched(
    attack: BatchAttack,
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    ids: torch.Tensor,
    k: int,
    cfg: AttackConfig,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Apply a per-batch attack to (X, y) whose global sample indices are ``ids``."""
    x_adv = X.clone()
    fooled = torch.zeros(len(X), dtype=torch.bool)
    for s in range(0, len(X), cfg.batch_size):
        sl = slice(s, s + cfg.batch_size)
        streams = SampleStreams(cfg.seed, ids[sl])
        x_adv[sl], fooled[sl] = attack(model, X[sl], y[sl], k, streams)
    return x_adv, fooled


def _stage(method: str, cfg: AttackConfig) -> BatchAttack:
    spgd_kw = dict(
        iters=cfg.iters, eps=cfg.eps, alpha=cfg.alpha, beta=cfg.beta, patience=cfg.patience, loss=cfg.loss
    )
    if method == "spgd":
        return partial(spgd_batch, projected=False, **spgd_kw)
    if method == "spgd_proj":
        return partial(spgd_batch, projected=True, **spgd_kw)
    if method == "rs":
        return partial(sparse_rs_batch, queries=cfg.rs_queries)
    if method == "saliency":
        return saliency_batch
    if method == "noise":
        return partial(random_noise_batch, draws=cfg.noise_draws)
    raise ValueError(f"method: unknown attack {method!r}")


def _cascade(model: nn.Module, X: torch.Tensor, y: torch.Tensor, stages: list[str], cfg: AttackConfig) -> AttackResult:
    """Run ``stages`` one after the other, each on the previous stage's survivors."""
    model.eval()
    if cfg.k < 1:
        raise ValueError("k: must be >= 1")
    x_adv = X.clone()
    success = predict(model, X) != y
    counts = {"clean": int((~success).sum())}
    for name in stages:
        alive = (~success).nonzero().squeeze(1)
        xa, fa = _run_batched(_stage(name, cfg), model, X[alive], y[alive], alive, cfg.k, cfg)
        x_adv[alive[fa]] = xa[fa]
        x_adv[alive[~fa]] = xa[~fa]  # survivors keep their highest-loss iterate
        success[alive[fa]] = True
        counts[name] = int((~success).sum())
    return AttackResult(x_adv=x_adv, success=success, stages=counts)


def _ensemble(model: nn.Module, X: torch.Tensor, y: torch.Tensor, cfg: AttackConfig) -> AttackResult:
    """sPGD unprojected and projected, each on every clean-correct sample; a sample survives
    only if it survives both (the fooling x_adv of the unprojected run is preferred)."""
    unproj = _cascade(model, X, y, ["spgd"], cfg)
    proj = _cascade(model, X, y, ["spgd_proj"], cfg)
    use_proj = proj.success & ~unproj.success
    x_adv = torch.where(use_proj.view(-1, 1, 1, 1), proj.x_adv, unproj.x_adv)
    success = unproj.success | proj.success
    stages = {
        "clean": unproj.stages["clean"],
        "spgd": unproj.stages["spgd"],
        "spgd_proj": proj.stages["spgd_proj"],
        "spgd_ens": int((~success).sum()),
    }
    return AttackResult(x_adv=x_adv, success=success, stages=stages)


SAA_STAGES = ["spgd", "spgd_proj", "rs"]


def run_attack(model: nn.Module, X: torch.Tensor, y: torch.Tensor, method: Method, cfg: AttackConfig) -> AttackResult:
    """Evaluate ``model`` on (X, y) under one l0 attack at budget ``cfg.k`` pixels.

    ``saa`` is the cascade sPGD-unprojected -> sPGD-projected -> Sparse-RS (CE loss, no targeted
    stage, as in the authors' code).
    """
    if method == "saa":
        return _cascade(model, X, y, SAA_STAGES, cfg)
    if method == "spgd_ens":
        return _ensemble(model, X, y, cfg)
    return _cascade(model, X, y, [method], cfg)
