"""The digits data every sparse-PGD experiment uses, and npz loading for other data.

The split is the spec's: scikit-learn's bundled digits, pixels/16, shape (N, 1, 8, 8), a 70/30
stratified split with seed 0 (1257 train, 540 test images).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from methods._data import digits_stratified_split, load_npz

SPLIT_SEED = 0
TEST_FRACTION = 0.3


def digits_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test) as float32 (N,1,8,8) in [0,1] and int64 labels."""
    X_tr, y_tr, X_te, y_te = digits_stratified_split(TEST_FRACTION, SPLIT_SEED)
    return X_tr.reshape(-1, 1, 8, 8), y_tr, X_te.reshape(-1, 1, 8, 8), y_te


def load_dataset(spec: str, *, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Built-in ``digits_train``/``digits_test`` or an npz with ``X`` (N,c,h,w) in [0,1], ``y``.

    ``split`` only names which built-in split the caller expects, for the error message.
    """
    if spec in ("digits_train", "digits_test"):
        X_tr, y_tr, X_te, y_te = digits_split()
        X, y = (X_tr, y_tr) if spec == "digits_train" else (X_te, y_te)
        return torch.from_numpy(X), torch.from_numpy(y)
    if not Path(spec).is_file():
        raise FileNotFoundError(f"data: {spec!r} is neither 'digits_{split}' nor an existing npz")
    f = load_npz(spec, "data", required=("X", "y"))
    X = np.asarray(f["X"], dtype=np.float32)
    y = np.asarray(f["y"]).astype(np.int64)
    if X.ndim != 4 or y.shape != (X.shape[0],):
        raise ValueError(f"data: X must be (N,c,h,w) and y (N,); got {X.shape} and {y.shape}")
    if X.min() < 0 or X.max() > 1:
        raise ValueError("data: X must lie in [0, 1]")
    return torch.from_numpy(X), torch.from_numpy(y)
