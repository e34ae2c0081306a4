"""The secret, seed-fixed transform applied to every digits image this task uses.

scikit-learn ships the digits images, held-out ones included. A fixed pixel permutation and a
little fixed noise make the bundled copy unmatchable by lookup, while leaving the problem for a
fully connected network unchanged (its first layer is permutation-equivariant).
"""

import numpy as np

from methods.sgr_local.data import digits_arrays

_SECRET_SEED = 80_417_236
NOISE = 0.02


def _transform(X: np.ndarray, rng_key: int) -> np.ndarray:
    perm = np.random.default_rng(_SECRET_SEED).permutation(X.shape[1])
    noise = np.random.default_rng([_SECRET_SEED, rng_key]).normal(0.0, NOISE, X.shape)
    return (X[:, perm] + noise).astype(np.float32)


def transformed_split():
    """(X_train, y_train, X_test, y_test): the spec's 1257/540 split, transformed."""
    X_tr, y_tr, X_te, y_te = digits_arrays(seed=0)
    return _transform(X_tr, 1), y_tr, _transform(X_te, 2), y_te


SPLITS = ("test", "search", "select")


def heldout_index(split: str) -> np.ndarray:
    """Which of the 540 held-out images make up the private ``split`` (search, select or test:
    environments/task/splits.py): a fixed secret permutation cut in thirds of 180. The digits
    cannot grow, so the three splits share the held-out pool that test once had alone."""
    n = 540
    order = np.random.default_rng([_SECRET_SEED, 3]).permutation(n)
    k, size = SPLITS.index(split), n // len(SPLITS)
    return np.sort(order[k * size:(k + 1) * size])
