"""Classifiers for the digits experiments, and loading any classifier from a string.

The attack never reads shapes from the model; these models only exist so that the tool and the
tests have something to attack. ``load_model`` is how the tool reaches a workspace's own
``model:Net``.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn


class DigitsMLP(nn.Module):
    """The 64-256-256-10 ReLU MLP of the spec (about 85k parameters)."""

    def __init__(self, hidden: int = 256, n_in: int = 64, n_classes: int = 10) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(n_in, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class SmallCNN(nn.Module):
    """Conv 1->16 3x3, ReLU, 2x2 max-pool, linear: the spec's any-classifier check."""

    def __init__(self, channels: int = 1, n_classes: int = 10, side: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 16, 3, padding=1)
        self.fc = nn.Linear(16 * (side // 2) ** 2, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(h.flatten(1))


def import_object(ref: str) -> Any:
    """``"pkg.module:Name"`` -> the object; the working directory is importable (``model:Net``)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"model: {ref!r} must look like 'pkg.module:Name'")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        raise ValueError(f"model: cannot import {module_name!r} ({err})") from err
    if not hasattr(module, attr):
        raise ValueError(f"model: {module_name!r} has no attribute {attr!r}")
    return getattr(module, attr)


def load_model(
    ref: str, checkpoint: str | None = None, model_kwargs: dict[str, Any] | None = None
) -> nn.Module:
    """Build ``ref(**model_kwargs)`` and load a state_dict with ``weights_only=True``."""
    factory = import_object(ref)
    model = factory(**(model_kwargs or {}))
    if not isinstance(model, nn.Module):
        raise ValueError(f"model: {ref!r} did not return an nn.Module")
    if checkpoint is not None:
        path = Path(checkpoint)
        if not path.exists():
            raise FileNotFoundError(f"checkpoint: {checkpoint!r} does not exist")
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    return model


def train_standard(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int = 30,
    lr: float = 1e-3,
    batch_size: int = 64,
    seed: int = 0,
) -> nn.Module:
    """Plain CE training with Adam, shuffled mini-batches from a seeded generator."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(X), generator=gen)
        for start in range(0, len(X), batch_size):
            idx = perm[start : start + batch_size]
            loss = nn.functional.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return model
