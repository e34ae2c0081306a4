"""Distilling digits: D3S's Gaussian feature matching, distribution matching (DM), random real.

D3S's loss, as restated by a later paper ("SPS", §3.1 "Review: D3S"; not read in D3S's own text):
    L(S) = (1/K) Σ_k [ Σ_l KL( N(μ^T_kl, Σ^T_kl) ‖ N(μ^S_kl, Σ^S_kl) ) + CE(f_k(X_S), Y_S) ],
real (T) against synthetic (S) feature Gaussians of every teacher layer, with *global* (not
per-class) statistics; the class information enters through CE only. Unverified there, and chosen
here: KL(real ‖ synthetic); CE on hard labels; three teachers; both hidden layers.
CPU adaptations (ours): post-BN, pre-ReLU features from teachers in eval mode (running stats);
a shared random projection of each 128-d layer to 16-d (full covariances from 10–50 images are
singular) and ε·I with ε = 0.01·mean diag Σ^T on both covariances. The paper's universal bound
is not implemented. At this scale D3S beats random real images but not DM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from methods.d3s.data import N_CLASSES, Split
from methods.d3s.models import PlainMLP, Teacher
from methods.d3s.stats import Gaussian, gaussian_kl, moments, regularised

WIDTH = 128


@dataclass
class DistillConfig:
    ipc: int = 1
    method: str = "d3s"  # d3s | dm | random_real
    steps: int = 500
    lr: float = 0.01
    lam_kl: float = 1.0
    lam_ce: float = 1.0
    features: str = "post_bn"  # post_bn | post_relu
    proj_dim: int = 16  # 0 = the full 128-d layer
    eps_rel: float = 0.01
    soft_tau: float = 2.0
    init_seed: int = 0


@dataclass
class DistillResult:
    X: torch.Tensor
    y: torch.Tensor
    y_soft: torch.Tensor
    init_index: np.ndarray
    kl_init: float
    kl_final: float
    ce_final: float
    loss_curve: list[dict[str, Any]] = field(default_factory=list)


def init_synthetic(split: Split, ipc: int, init_seed: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """IPC training images per class (classes in order, without replacement, one rng)."""
    rng = np.random.default_rng(init_seed)
    labels = split.y_train.numpy()
    index = []
    for c in range(N_CLASSES):
        members = np.flatnonzero(labels == c)
        if len(members) < ipc:
            raise ValueError(f"ipc: class {c} has only {len(members)} training images")
        index.extend(rng.choice(members, size=ipc, replace=False).tolist())
    index = np.asarray(index)
    return split.X_train[index].clone(), split.y_train[index].clone(), index


def projections(proj_dim: int) -> list[torch.Tensor] | None:
    """P₁, P₂ ∈ ℝ^{128×proj_dim}, entries N(0, 1/128), one Generator seeded 0; None = identity."""
    if proj_dim == 0:
        return None
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(WIDTH, proj_dim, generator=gen) / math.sqrt(WIDTH) for _ in range(2)]


class D3SObjective:
    """Holds the real statistics of every (teacher, layer); evaluates L(S) and its parts."""

    def __init__(self, teachers: list[Teacher], X_real: torch.Tensor, cfg: DistillConfig) -> None:
        self.teachers = teachers
        self.post_relu = cfg.features == "post_relu"
        self.proj = projections(cfg.proj_dim)
        self.lam_kl, self.lam_ce = cfg.lam_kl, cfg.lam_ce
        self.real: list[list[Gaussian]] = []
        self.eps: list[list[float]] = []
        with torch.no_grad():
            for teacher in teachers:
                layers, eps_row = [], []
                for f in self._features(teacher, X_real)[0]:
                    g = moments(f)
                    eps = cfg.eps_rel * float(torch.diagonal(g.cov).mean())
                    layers.append(regularised(g, eps))
                    eps_row.append(eps)
                self.real.append(layers)
                self.eps.append(eps_row)

    def _features(self, teacher: Teacher, X: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        f1, f2, logits = teacher.hidden(X, post_relu=self.post_relu)
        feats = [f1, f2] if self.proj is None else [f1 @ self.proj[0], f2 @ self.proj[1]]
        return feats, logits

    def __call__(self, X: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, float, float]:
        """(total, mean KL over teachers, mean CE over teachers)."""
        kl_total = X.new_zeros((), dtype=torch.float64)
        ce_total = X.new_zeros(())
        for k, teacher in enumerate(self.teachers):
            feats, logits = self._features(teacher, X)
            for l, f in enumerate(feats):
                synthetic = regularised(moments(f), self.eps[k][l])
                kl_total = kl_total + gaussian_kl(self.real[k][l], synthetic)
            ce_total = ce_total + F.cross_entropy(logits, y)
        K = len(self.teachers)
        kl, ce = kl_total / K, ce_total / K
        return self.lam_kl * kl.float() + self.lam_ce * ce, float(kl.detach()), float(ce.detach())


def dm_loss(X: torch.Tensor, y: torch.Tensor, real_means: dict[int, torch.Tensor] | None,
            X_real: torch.Tensor, y_real: torch.Tensor, step: int) -> torch.Tensor:
    """Distribution matching: Σ_c ‖mean h₂(real c) − mean h₂(S c)‖² under a fresh random MLP."""
    torch.manual_seed(1000 + step)
    net = PlainMLP(WIDTH)
    for p in net.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        h_real = net.embed(X_real)
    h_syn = net.embed(X)
    loss = X.new_zeros(())
    for c in range(N_CLASSES):
        real_mean = h_real[y_real == c].mean(0)
        loss = loss + ((real_mean - h_syn[y == c].mean(0)) ** 2).sum()
    return loss


def soft_labels(teacher: Teacher, X: torch.Tensor, tau: float) -> torch.Tensor:
    with torch.no_grad():
        return torch.softmax(teacher(X) / tau, dim=1)


def distill(split: Split, teachers: list[Teacher], cfg: DistillConfig, curve_every: int = 50) -> DistillResult:
    """Run one method from the same random-real init; D3S's KL/CE are reported for every method."""
    if cfg.method not in ("d3s", "dm", "random_real"):
        raise ValueError(f"method: unknown method {cfg.method!r}")
    X0, y, index = init_synthetic(split, cfg.ipc, cfg.init_seed)
    objective = D3SObjective(teachers, split.X_train, cfg)
    with torch.no_grad():
        _, kl_init, _ = objective(X0, y)
    X = X0.clone().requires_grad_(cfg.method != "random_real")
    curve: list[dict[str, Any]] = []
    if cfg.method != "random_real":
        opt = torch.optim.Adam([X], lr=cfg.lr)
        for step in range(cfg.steps):
            if cfg.method == "d3s":
                total, kl, ce = objective(X, y)
            else:
                total = dm_loss(X, y, None, split.X_train, split.y_train, step)
                with torch.no_grad():
                    _, kl, ce = objective(X, y)
            if step % curve_every == 0:
                curve.append({"step": step, "total": float(total.detach()), "kl": kl, "ce": ce})
            opt.zero_grad(set_to_none=True)
            total.backward()
            opt.step()
    X = X.detach()
    with torch.no_grad():
        _, kl_final, ce_final = objective(X, y)
    return DistillResult(
        X=X, y=y, y_soft=soft_labels(teachers[0], X, cfg.soft_tau), init_index=index,
        kl_init=kl_init, kl_final=kl_final, ce_final=ce_final, loss_curve=curve,
    )
