"""Fixed training harness for the local-learning task (read-only; eval.py uses it too).

The model is fixed: 16 modules of Linear(64->64)+ReLU, each with a Linear(64->10) head; the
prediction is the last head's. Training is gradient-isolated local learning: module l receives a
DETACHED copy of h_{l-1} (requires_grad so you can differentiate with respect to it), computes
its own loss with ``rule.module_loss(ctx)``, and backpropagates it into its own parameters only.
All modules train from the same minibatch at every step; parameters update after all modules
have run. The harness checks isolation at every step (a gradient on another module's parameters
fails the run) and measures the autograd-saved memory of one step against end-to-end backprop.

``ctx`` fields: h_in (detached input, requires grad), h_out (module output), logits (this
module's head), y, index (0..15), depth (16), prev (whatever module index-1 returned as its
second value, detached; None for module 0). ``module_loss`` returns (loss, forward) or
(loss, forward, logs_dict).
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np
import torch
from torch import nn

from methods.sgr_local import LocalNet, TrainConfig, train
from methods.sgr_local.data import Split
from methods.sgr_local.training import measure_bp_saved_bytes

DEPTH, WIDTH, N_FEATURES, N_CLASSES = 16, 64, 64, 10
MAX_EPOCHS = 40
MAX_SAVED_RATIO = 0.6
TRAINING_KEYS = {"lr", "optimizer", "momentum", "weight_decay", "schedule", "batch_size", "epochs"}


class HarnessError(ValueError):
    """A rule or CONFIG that breaks the task's rules."""


def load_npz(path: str) -> tuple[torch.Tensor, torch.Tensor]:
    with np.load(path) as f:
        return torch.as_tensor(f["X"], dtype=torch.float32), torch.as_tensor(f["y"]).long()


def training_config(config: dict[str, Any], seed: int) -> TrainConfig:
    """The harness-level part of CONFIG (other keys belong to the rule)."""
    kw = {k: config[k] for k in TRAINING_KEYS if k in config}
    cfg = TrainConfig(**kw, seed=seed, measure_memory=True, check_isolation=True)
    if not 1 <= cfg.epochs <= MAX_EPOCHS:
        raise HarnessError(f"CONFIG['epochs'] must be in 1..{MAX_EPOCHS}, got {cfg.epochs}")
    if cfg.optimizer not in ("adam", "sgd") or cfg.schedule not in ("none", "cosine"):
        raise HarnessError("CONFIG: optimizer must be adam|sgd and schedule none|cosine")
    if not 1 <= cfg.batch_size <= 1257:
        raise HarnessError("CONFIG['batch_size'] must be in 1..1257")
    return cfg


def _rule_holds_parameters(rule: ModuleType) -> bool:
    return any(isinstance(v, (nn.Module, nn.Parameter, torch.optim.Optimizer))
               for v in vars(rule).values())


def run(rule: ModuleType, X_train: torch.Tensor, y_train: torch.Tensor, X_test: torch.Tensor,
        y_test: torch.Tensor, seed: int, verbose: bool = False) -> dict[str, Any]:
    """Train the fixed model with ``rule`` and return accuracy plus every gate's measurement."""
    torch.set_num_threads(1)
    cfg = training_config(dict(getattr(rule, "CONFIG", {})), seed)
    model = LocalNet(N_FEATURES, WIDTH, DEPTH, N_CLASSES, seed=seed)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    first = torch.randperm(len(y_train), generator=torch.Generator().manual_seed(seed))
    bp_bytes = measure_bp_saved_bytes(model, X_train[first[:cfg.batch_size]],
                                      y_train[first[:cfg.batch_size]])
    split = Split(X_train, y_train, X_test, y_test)

    def progress(epoch: int, log: dict[str, float]) -> None:
        if verbose:
            print(f"  epoch {epoch}: " + ", ".join(f"{k}={v:.4f}" for k, v in log.items()
                                                 if k != "epoch"))

    start = time.process_time()
    result = train(model, split, cfg, rule.module_loss, on_epoch=progress)
    cpu = time.process_time() - start
    params_ok = (shapes == {k: tuple(v.shape) for k, v in model.state_dict().items()}
                 and not _rule_holds_parameters(rule))
    return {
        "test_acc": result.test_acc,
        "train_acc": result.train_acc,
        "isolation_ok": result.isolation_ok,
        "saved_bytes_ratio": result.saved_bytes_peak / bp_bytes,
        "params_ok": params_ok,
        "cpu_seconds": cpu,
        "epochs": cfg.epochs,
    }


def gate_failures(report: dict[str, Any]) -> list[str]:
    """The task's gates, as reasons; empty when the run is admissible."""
    reasons = []
    if not report["isolation_ok"]:
        reasons.append("a module's loss put gradient on another module's parameters")
    if report["saved_bytes_ratio"] > MAX_SAVED_RATIO:
        reasons.append(f"saved-tensor memory is {report['saved_bytes_ratio']:.2f} of BP's "
                       f"(limit {MAX_SAVED_RATIO})")
    if not report["params_ok"]:
        reasons.append("parameters outside the harness model and heads")
    return reasons
