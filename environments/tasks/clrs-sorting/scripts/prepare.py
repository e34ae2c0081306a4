"""Generate the clrs-sorting task's data: learn to sort by a hidden key, generalise to larger sets.

Each example is a set of items, each item a vector of D features. Items are ordered by a
hidden key, a fixed non-linear function of the features that the actor must learn from data.
The target, in the pointer form of CLRS's sorting algorithms, is each item's successor in
ascending key order (the largest item points to itself). Training sets have 4-10 items; the
test sets have 16 and 32 items: out-of-distribution sizes, as in CLRS's evaluation.

Writes (current directory = the task copy's ``scripts/``):
  ../env/train.npz   x (M, 10, D) float32, mask (M, 10) bool, successor (M, 10) int64 (-1 pad)
  ../env/val.npz     the same, with sets of 12 items (for model selection)
  ../env/test.npz    x (T, 32, D) float32, mask (T, 32) bool         (no successors)
  answers.npz        successor (T, 32) int64 of rows 0..T-1: the test split (private; eval.py)
  search_answers.npz, select_answers.npz
                     example (S,) int64, successor (S, 32) int64: the search and select splits

The private splits (task.toml [splits]): the test sets are rows 0..299 of test.npz, drawn as
they always were; the search and select sets (150 of each size each) are drawn after them from
the same generator and fill rows 300..899 in a seeded shuffled order, so a row past the test
ones does not say which of the two splits it belongs to.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SEED = 5_381
D = 6
N_TRAIN, TRAIN_SIZES = 3000, (4, 10)
N_VAL, VAL_SIZE = 200, 12
N_TEST_PER_SIZE, TEST_SIZES = 150, (16, 32)
N_SPLIT_PER_SIZE = 150  # per size, for each of search and select
HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "env"


def hidden_key(x: np.ndarray, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    return x @ w + 0.8 * np.tanh(2.0 * (x @ v))


def make_sets(rng, sizes, width, w, v):
    n_sets = len(sizes)
    x = np.zeros((n_sets, width, D), dtype=np.float32)
    mask = np.zeros((n_sets, width), dtype=bool)
    successor = np.full((n_sets, width), -1, dtype=np.int64)
    for i, n in enumerate(sizes):
        items = rng.normal(0.0, 1.0, size=(n, D)).astype(np.float32)
        order = np.argsort(hidden_key(items.astype(np.float64), w, v), kind="stable")
        x[i, :n], mask[i, :n] = items, True
        successor[i, order[:-1]] = order[1:]
        successor[i, order[-1]] = order[-1]
    return x, mask, successor


def main() -> None:
    rng = np.random.default_rng(SEED)
    w = rng.normal(size=D)
    w /= np.linalg.norm(w)
    v = rng.normal(size=D)
    v /= np.linalg.norm(v)
    lo, hi = TRAIN_SIZES
    train = make_sets(rng, rng.integers(lo, hi + 1, N_TRAIN), hi, w, v)
    val = make_sets(rng, [VAL_SIZE] * N_VAL, VAL_SIZE, w, v)
    test_sizes = np.repeat(TEST_SIZES, N_TEST_PER_SIZE)
    test = make_sets(rng, test_sizes, max(TEST_SIZES), w, v)
    # search and select: drawn after everything above, so the test (and all else) is unchanged
    extra_sizes = np.tile(np.repeat(TEST_SIZES, N_SPLIT_PER_SIZE), 2)
    extra = make_sets(rng, extra_sizes, max(TEST_SIZES), w, v)
    half = len(extra_sizes) // 2  # the first half of the draw is search, the second select
    rows = len(test_sizes) + rng.permutation(len(extra_sizes))  # drawn set k goes to rows[k]
    order = np.argsort(rows)
    public_x = np.concatenate([test[0], extra[0][order]])
    public_mask = np.concatenate([test[1], extra[1][order]])

    ENV.mkdir(parents=True, exist_ok=True)
    for name, (x, mask, successor) in (("train", train), ("val", val)):
        np.savez_compressed(ENV / f"{name}.npz", x=x, mask=mask, successor=successor)
    np.savez_compressed(ENV / "test.npz", x=public_x, mask=public_mask)
    np.savez_compressed(HERE / "answers.npz", successor=test[2])
    for split, drawn in (("search", slice(0, half)), ("select", slice(half, None))):
        np.savez_compressed(HERE / f"{split}_answers.npz", example=rows[drawn],
                            successor=extra[2][drawn])
    print(f"clrs-sorting: {N_TRAIN} train sets of {lo}-{hi} items, {N_VAL} val sets of "
          f"{VAL_SIZE}, test sets of {TEST_SIZES} items written to {ENV}")


if __name__ == "__main__":
    main()
