"""Loaders every method package shares: an argument-named npz reader and sklearn's digits.

Tools take data as ``.npz`` paths from actors, so every package needs the same care: a missing
file, a file that is not an npz, or a missing array must fail as the caller's mistake (a
``FileNotFoundError`` / ``ValueError`` whose message starts with the argument's name, which
``methods._tool`` reports as exit 2), and never unpickle (``allow_pickle=False``: an npz from an
actor is untrusted). The digits helpers keep the splits the packages' specs fixed, bit for bit.

numpy only; sklearn is imported inside the digits functions (it is slow to import).
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DIGITS_PIXELS = 64


def load_npz(path: str | Path, field: str, required: Sequence[str] = (),
             optional: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """The arrays of the npz at ``path``: ``required`` (all must be there) plus whichever of
    ``optional`` are; every array when neither is given. ``field`` names the tool argument
    the path came from, so the error says which argument to fix."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{field}: no such file {str(path)!r}")
    try:
        f = np.load(p, allow_pickle=False)
        if not isinstance(f, np.lib.npyio.NpzFile):
            raise ValueError("a single .npy array, not an .npz archive")
        with f:
            missing = [k for k in required if k not in f.files]
            if missing:
                raise KeyError(missing)
            keys = [*required, *(k for k in optional if k in f.files)] if required or optional else f.files
            return {k: f[k] for k in keys}
    except KeyError as err:
        raise ValueError(f"{field}: {str(path)!r} lacks the array(s) {err.args[0]}") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(f"{field}: {str(path)!r} is not a readable npz ({err})") from None


def digits() -> tuple[np.ndarray, np.ndarray]:
    """sklearn's bundled digits: X (1797, 64) float32 in [0, 1] (pixel / 16, exact), y int64."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)


def digits_permuted_split(n_train: int, seed: int = 0
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test): the first ``n_train`` of ``default_rng(seed)``'s
    permutation train, the rest test."""
    X, y = digits()
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, te = perm[:n_train], perm[n_train:]
    return X[tr], y[tr], X[te], y[te]


def digits_stratified_split(test_fraction: float = 0.3, seed: int = 0
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test): sklearn's stratified ``train_test_split`` (1257 / 540
    at the default 0.3)."""
    from sklearn.model_selection import train_test_split

    X, y = digits()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_fraction, stratify=y,
                                              random_state=seed)
    return X_tr, y_tr, X_te, y_te
