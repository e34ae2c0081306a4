"""Training loops: end-to-end BP, and gradient-isolated local learning with any module rule.

One local step ("forward mode"): for l = 1..L, take the detached h_{l-1} (requiring grad), run
f_l and g_l, let the rule build this module's loss, backpropagate it into (θ_l, g_l) and free the
graph, then hand the detached h_l and the rule's ``forward`` to module l+1. All parameters step
after the loop, so every forward in a step sees the pre-step parameters (non-greedy, as the
paper's convergence analysis assumes).
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn.functional as F

from methods.sgr_local.data import Split
from methods.sgr_local.memory import SavedTensorMeter
from methods.sgr_local.model import LocalNet
from methods.sgr_local.rules import ModuleContext

Rule = Callable[[ModuleContext], tuple]


@dataclass
class TrainConfig:
    epochs: int = 40
    lr: float = 1e-3
    batch_size: int = 64
    optimizer: Literal["adam", "sgd"] = "adam"
    momentum: float = 0.9  # sgd only
    weight_decay: float = 0.0
    schedule: Literal["none", "cosine"] = "none"
    seed: int = 0
    measure_memory: bool = True
    check_isolation: bool = True


@dataclass
class TrainResult:
    model: LocalNet
    test_acc: float
    train_acc: float
    isolation_ok: bool
    saved_bytes_peak: int | None
    epoch_log: list[dict[str, float]] = field(default_factory=list)


def _optimizer(params, cfg: TrainConfig, steps: int):
    if cfg.optimizer == "adam":
        # fused: one kernel for all tensors; the per-tensor Python loop dominated small steps
        opt = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True)
    else:
        opt = torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                              weight_decay=cfg.weight_decay)
    sched = (torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
             if cfg.schedule == "cosine" else None)
    return opt, sched


def _detach(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, dict):
        return {k: _detach(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_detach(v) for v in value)
    return value


def local_step(
    model: LocalNet, x: torch.Tensor, y: torch.Tensor, rule: Rule,
    meter: SavedTensorMeter | None = None, check_isolation: bool = True,
) -> tuple[dict[str, float], bool]:
    """Accumulate every module's local gradient for one minibatch; returns (logs, isolation_ok).

    The isolation check: before module l's backward, every gradient in the model is set aside and
    zeroed; afterwards any nonzero gradient outside (θ_l, g_l) fails the check, then the others'
    gradients are put back.
    """
    L = model.depth
    all_params = list(model.parameters())
    logs: dict[str, float] = {"loss": 0.0}
    ok, h, prev = True, x, None
    for index in range(L):
        own = {id(p) for p in model.module_parameters(index)}
        others = [p for p in all_params if id(p) not in own]
        with meter.graph() if meter is not None else contextlib.nullcontext():
            h_in = h.detach().requires_grad_(True)
            h_out = model.block(index, h_in)
            logits = model.heads[index](h_out)
            out = rule(ModuleContext(h_in, h_out, logits, y, index, L, prev))
            loss, forward = out[0], out[1]
            extra = out[2] if len(out) > 2 and out[2] else {}
            stash = [p.grad for p in others] if check_isolation else []
            if check_isolation:
                for p in others:
                    p.grad = None
            loss.backward()
        if check_isolation:
            for p, g in zip(others, stash):
                if p.grad is not None and bool(p.grad.ne(0).any()):
                    ok = False
                p.grad = g
        logs["loss"] += loss.item() / L
        for k, v in extra.items():
            logs[k] = logs.get(k, 0.0) + float(v) / L
        h, prev = h_out.detach(), _detach(forward)
    return logs, ok


def bp_step(model: LocalNet, x: torch.Tensor, y: torch.Tensor,
            meter: SavedTensorMeter | None = None) -> dict[str, float]:
    """One end-to-end step through modules 1..L and g_L only (one graph)."""
    with meter.graph() if meter is not None else contextlib.nullcontext():
        loss = F.cross_entropy(model(x), y)
        loss.backward()
    return {"loss": loss.item()}


@torch.no_grad()
def accuracy(model: LocalNet, X: torch.Tensor, y: torch.Tensor) -> float:
    return float((model(X).argmax(dim=1) == y).float().mean())


def grad_cosines(model: LocalNet, X: torch.Tensor, y: torch.Tensor) -> list[float]:
    """cos(vec G^in_l, vec G^out_{l-1}) for l = 2..L on one batch (flattened over samples and
    features), each from the module's summed CE; the spec's definition of "reconciliation"."""
    out, h, g_prev = [], X, None
    for index in range(model.depth):
        h_in = h.detach().requires_grad_(True)
        h_out = model.block(index, h_in)
        ce = F.cross_entropy(model.heads[index](h_out), y, reduction="sum")
        g_in, g_out = torch.autograd.grad(ce, [h_in, h_out])
        if g_prev is not None:
            out.append(float(F.cosine_similarity(g_in.flatten(), g_prev.flatten(), dim=0)))
        h, g_prev = h_out.detach(), g_out
    return out


def measure_bp_saved_bytes(model: LocalNet, x: torch.Tensor, y: torch.Tensor) -> int:
    """Saved bytes of one BP step on a throwaway copy (the memory reference for local runs)."""
    meter = SavedTensorMeter()
    bp_step(copy.deepcopy(model), x, y, meter)
    return meter.peak


def train(
    model: LocalNet, split: Split, cfg: TrainConfig, rule: Rule | None = None,
    on_epoch: Callable[[int, dict[str, float]], None] | None = None,
) -> TrainResult:
    """Train ``model`` end to end (``rule=None``) or locally with ``rule``; full epochs of
    shuffled minibatches from a generator seeded by ``cfg.seed``."""
    n = split.X_train.shape[0]
    batches_per_epoch = math.ceil(n / cfg.batch_size)
    params = (list(model.parameters()) if rule is not None
              else [*(p for b in model.blocks for p in b.parameters()),
                    *model.heads[-1].parameters()])
    opt, sched = _optimizer(params, cfg, cfg.epochs * batches_per_epoch)
    gen = torch.Generator().manual_seed(cfg.seed)
    isolation_ok, peak, log = True, None, []
    for epoch in range(cfg.epochs):
        perm = torch.randperm(n, generator=gen)
        sums: dict[str, float] = {}
        for b in range(batches_per_epoch):
            idx = perm[b * cfg.batch_size:(b + 1) * cfg.batch_size]
            x, y = split.X_train[idx], split.y_train[idx]
            meter = SavedTensorMeter() if (cfg.measure_memory and peak is None) else None
            opt.zero_grad(set_to_none=True)
            if rule is None:
                logs = bp_step(model, x, y, meter)
            else:
                logs, ok = local_step(model, x, y, rule, meter, cfg.check_isolation)
                isolation_ok &= ok
            if meter is not None:
                peak = meter.peak
            opt.step()
            if sched is not None:
                sched.step()
            for k, v in logs.items():
                sums[k] = sums.get(k, 0.0) + v / batches_per_epoch
        log.append({"epoch": epoch + 1, **sums})
        if on_epoch is not None:
            on_epoch(epoch + 1, log[-1])
    return TrainResult(
        model=model,
        test_acc=accuracy(model, split.X_test, split.y_test),
        train_acc=accuracy(model, split.X_train, split.y_train),
        isolation_ok=isolation_ok,
        saved_bytes_peak=peak,
        epoch_log=log,
    )
