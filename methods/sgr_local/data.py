"""The digits split every SGR run uses, or a user's npz with the same four arrays."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from methods._data import digits_stratified_split, load_npz


@dataclass(frozen=True)
class Split:
    X_train: torch.Tensor  # float32 (N, D)
    y_train: torch.Tensor  # int64 (N,)
    X_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def n_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])


def digits_arrays(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """sklearn digits, X/16 flattened to 64 features, 70/30 stratified split: 1257 / 540."""
    return digits_stratified_split(0.3, seed)


def _as_split(X_tr, y_tr, X_te, y_te) -> Split:
    return Split(torch.as_tensor(X_tr, dtype=torch.float32), torch.as_tensor(y_tr).long(),
                 torch.as_tensor(X_te, dtype=torch.float32), torch.as_tensor(y_te).long())


def load_digits_split(seed: int = 0) -> Split:
    return _as_split(*digits_arrays(seed))


def load_npz_split(path: str | Path) -> Split:
    """An npz with X_train, y_train, X_test, y_test (2-D float X, integer labels from 0)."""
    keys = ("X_train", "y_train", "X_test", "y_test")
    f = load_npz(path, "data", required=keys)
    X_tr, y_tr, X_te, y_te = (f[k] for k in keys)
    if X_tr.ndim != 2 or X_te.ndim != 2 or X_tr.shape[1] != X_te.shape[1]:
        raise ValueError("data: X_train and X_test must be 2-D with the same number of features")
    for y, X in ((y_tr, X_tr), (y_te, X_te)):
        if y.ndim != 1 or len(y) != len(X) or not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
            raise ValueError("data: labels must be 1-D non-negative integers, one per row of X")
    return _as_split(X_tr, y_tr, X_te, y_te)
