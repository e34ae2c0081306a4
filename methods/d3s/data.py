"""Digits, split the way the spec fixes it: X/16 as float32, a seeded permutation, 1200 / 597."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch

from methods._data import digits_permuted_split, load_npz

N_TRAIN = 1200
N_CLASSES = 10


@dataclass(frozen=True)
class Split:
    X_train: torch.Tensor  # (n, 64) float32
    y_train: torch.Tensor  # (n,) int64
    X_test: torch.Tensor | None = None
    y_test: torch.Tensor | None = None

    def fingerprint(self) -> str:
        """Short hash of the training data (keys the teacher cache)."""
        h = hashlib.sha256(self.X_train.numpy().tobytes())
        h.update(self.y_train.numpy().tobytes())
        return h.hexdigest()[:12]


def load_digits_split() -> Split:
    """sklearn's bundled digits: perm = default_rng(0).permutation(1797); first 1200 train."""
    return Split(*(torch.from_numpy(a) for a in digits_permuted_split(N_TRAIN, seed=0)))


def load_npz_split(path: str | Path) -> Split:
    """An npz with ``X_train`` (n, 64) and ``y_train`` (n,) and optionally ``X_test``/``y_test``."""
    z = load_npz(path, "data", required=("X_train", "y_train"), optional=("X_test", "y_test"))
    X = torch.as_tensor(z["X_train"], dtype=torch.float32)
    y = torch.as_tensor(z["y_train"], dtype=torch.int64)
    X_test = torch.as_tensor(z["X_test"], dtype=torch.float32) if "X_test" in z else None
    y_test = torch.as_tensor(z["y_test"], dtype=torch.int64) if "y_test" in z else None
    if X.ndim != 2 or X.shape[1] != 64 or y.shape != (X.shape[0],):
        raise ValueError(f"data: X_train must be (n, 64) and y_train (n,), got {tuple(X.shape)}, {tuple(y.shape)}")
    return Split(X, y, X_test, y_test)


def load_split(data: str) -> Split:
    return load_digits_split() if data == "digits" else load_npz_split(data)
