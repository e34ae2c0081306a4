"""The CPU-scale source model (a BatchNorm MLP) and its training, cached per process."""

from __future__ import annotations

import copy
from functools import lru_cache

import torch
from torch import nn

from methods.entropy_enigma.data import load_digits_split


class DigitsBNMLP(nn.Module):
    """64 -> 128 -> BN -> ReLU -> 128 -> BN -> ReLU -> 10: BatchNorm is what EM adapts."""

    def __init__(self, in_features: int = 64, hidden: int = 128, classes: int = 10) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def train_source(x: torch.Tensor, y: torch.Tensor, seed: int = 0, epochs: int = 60,
                 batches_per_epoch: int = 20, batch_size: int = 50) -> DigitsBNMLP:
    """Adam 1e-3, minibatches drawn with replacement (the prototype's recipe)."""
    torch.manual_seed(seed)
    model = DigitsBNMLP(x.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for _ in range(epochs * batches_per_epoch):
        idx = torch.randint(0, len(x), (batch_size,))
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@lru_cache(maxsize=2)
def _cached_source(seed: int) -> DigitsBNMLP:
    split = load_digits_split()
    return train_source(torch.from_numpy(split.x_train), torch.from_numpy(split.y_train).long(), seed)


def builtin_source_model(seed: int = 0) -> DigitsBNMLP:
    """The built-in source model trained on the 1000 digits training images (a fresh copy)."""
    return copy.deepcopy(_cached_source(seed))
