"""One run: online SGD on fresh biased batches, test checks every ``eval_every`` steps, then LLR."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from methods.spurious_boolean.data import Batch, BooleanTask, sample
from methods.spurious_boolean.metrics import (
    evaluate,
    last_layer_retrain,
    spur_probe_acc,
    unit_split,
)
from methods.spurious_boolean.model import Net, make_net, sgd_step


@dataclass
class RunConfig:
    task: BooleanTask = field(default_factory=BooleanTask)
    lam: float = 0.9
    steps: int = 8000
    batch: int = 64
    lr: float = 0.05
    width: int = 128
    eval_every: int = 100
    target_acc: float = 0.95
    n_test: int = 4000
    test_seed: int = 999
    stop_at_core: bool = False
    llr: bool = False
    n_llr: int = 500
    llr_C: float = 1.0
    track: bool = False


def test_set(cfg: RunConfig) -> Batch:
    """Balanced (λ = 0.5) held-out samples from their own Generator."""
    return sample(cfg.task, cfg.n_test, 0.5, torch.Generator().manual_seed(cfg.test_seed))


def llr_set(cfg: RunConfig, seed: int) -> Batch:
    """The small balanced set LLR and the spurious probe are fitted on (seed 5 + 1000·seed)."""
    return sample(cfg.task, cfg.n_llr, 0.5, torch.Generator().manual_seed(5 + 1000 * seed))


def _logits(net: Net, batch: Batch) -> torch.Tensor:
    with torch.no_grad():
        return net(batch.x)


def train(cfg: RunConfig, seed: int, test: Batch) -> tuple[Net, int | None, list[dict[str, Any]]]:
    """SGD for ``cfg.steps`` steps; returns the net, the first checked step with test accuracy
    above ``target_acc`` (checks at t = 0, eval_every, … before the update at t, and after the
    last step) and the tracked curve."""
    net = make_net(cfg.task.dim, cfg.width, seed)
    gen = torch.Generator().manual_seed(seed)
    steps_to_core = None
    curve: list[dict[str, Any]] = []
    for t in range(cfg.steps + 1):
        if t % cfg.eval_every == 0 or t == cfg.steps:
            stats = evaluate(_logits(net, test), test)
            if cfg.track:
                curve.append({"step": t, "test_acc": stats["avg_acc"],
                              "worst_group_acc": stats["worst_group_acc"],
                              "corr_core": stats["corr_core"], "corr_spur": stats["corr_spur"]})
            if steps_to_core is None and stats["avg_acc"] > cfg.target_acc:
                steps_to_core = t
                if cfg.stop_at_core:
                    break
        if t == cfg.steps:
            break
        batch = sample(cfg.task, cfg.batch, cfg.lam, gen)
        sgd_step(net, batch.x, batch.y, cfg.lr)
    return net, steps_to_core, curve


def run_seed(cfg: RunConfig, seed: int, test: Batch | None = None) -> dict[str, Any]:
    test = test_set(cfg) if test is None else test
    net, steps_to_core, curve = train(cfg, seed, test)
    balanced = llr_set(cfg, seed)
    out: dict[str, Any] = {
        "seed": seed,
        "steps_to_core": steps_to_core,
        "final": evaluate(_logits(net, test), test),
        "llr": None,
        "unit_split": unit_split(net, cfg.task.n_core),
        "spur_probe_acc": spur_probe_acc(net, balanced, test, cfg.llr_C),
    }
    if cfg.llr:
        retrained = last_layer_retrain(net, balanced.x, balanced.y, cfg.llr_C)
        out["llr"] = evaluate(_logits(retrained, test), test)
    if cfg.track:
        out["curve"] = curve
    return out
