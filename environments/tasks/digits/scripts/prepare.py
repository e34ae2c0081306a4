"""Build the digits task's data from scikit-learn's bundled 8x8 digits, made unmatchable.

scikit-learn ships the same images, so the held-out labels could be looked up by matching a test
image against the bundled copy. To prevent that, every image goes through a secret, seed-fixed
transform before the split: a random shift of up to one pixel, a random contrast, Gaussian pixel
noise, and one fixed permutation of the 64 pixel positions (the same for every image, so a model
can still learn, but a bundled image no longer lines up with its transformed copy).

scikit-learn's 1,797 images are all there is, so the three private splits
(environments/task/splits.py) share the 700 held-out images: ``test`` 350, ``search`` 175,
``select`` 175, drawn by the seed. Their ids are one seeded shuffle of 0-699 over the whole pool,
so neither an id nor a row's place in test.csv says which split it is in.

Writes (current directory = the task copy's ``scripts/``):
  ../env/train.csv    label,p0..p63       (the actor's training data)
  ../env/test.csv     id,p0..p63          (the 700 held-out images, by id, no labels)
  test_labels.csv     id,label            (private, test; read by eval.py)
  search_labels.csv   id,label            (private, search)
  select_labels.csv   id,label            (private, select)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

SEED = 80_613_947  # secret: fixes the transform and the split
N_HELD_OUT = 700
SPLIT_SIZES = {"test": 350, "search": 175, "select": 175}  # of the held-out images
LABELS = {"test": "test_labels.csv", "search": "search_labels.csv",
          "select": "select_labels.csv"}
NOISE_STD = 1.5
HERE = Path(__file__).resolve().parent
ENV = HERE.parent / "env"


def shift(image: np.ndarray, dy: int, dx: int) -> np.ndarray:
    out = np.zeros_like(image)
    h, w = image.shape
    out[max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)] = image[
        max(-dy, 0) : h + min(-dy, 0), max(-dx, 0) : w + min(-dx, 0)
    ]
    return out


def transform(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The secret transform: (n, 8, 8) in [0, 16] -> (n, 64) rounded to 0.01."""
    n = len(images)
    moves = rng.integers(-1, 2, size=(n, 2))
    shifted = np.stack([shift(img, int(dy), int(dx)) for img, (dy, dx) in zip(images, moves)])
    contrast = rng.uniform(0.7, 1.3, size=(n, 1, 1))
    noisy = shifted * contrast + rng.normal(0.0, NOISE_STD, size=shifted.shape)
    flat = np.clip(noisy, 0.0, 20.0).reshape(n, 64)
    permutation = rng.permutation(64)
    return np.round(flat[:, permutation], 2)


def main() -> None:
    digits = load_digits()
    rng = np.random.default_rng(SEED)
    x = transform(digits.images.astype(np.float64), rng)
    y = digits.target.astype(int)
    order = rng.permutation(len(y))
    held_out, train_idx = order[:N_HELD_OUT], order[N_HELD_OUT:]
    ids = rng.permutation(N_HELD_OUT)  # ids[k]: the id of the image held_out[k]

    ENV.mkdir(parents=True, exist_ok=True)
    pixel_cols = ",".join(f"p{i}" for i in range(64))
    train = np.column_stack([y[train_idx], x[train_idx]])
    np.savetxt(ENV / "train.csv", train, delimiter=",", header="label," + pixel_cols,
               comments="", fmt=["%d"] + ["%.2f"] * 64)
    by_id = np.argsort(ids)
    test = np.column_stack([ids[by_id], x[held_out[by_id]]])
    np.savetxt(ENV / "test.csv", test, delimiter=",", header="id," + pixel_cols,
               comments="", fmt=["%d"] + ["%.2f"] * 64)
    start = 0
    for split, size in SPLIT_SIZES.items():
        part = np.arange(start, start + size)  # places in held_out, written by id
        part = part[np.argsort(ids[part])]
        labels = np.column_stack([ids[part], y[held_out[part]]])
        np.savetxt(HERE / LABELS[split], labels, delimiter=",", header="id,label",
                   comments="", fmt="%d")
        start += size
    print(f"digits: {len(train_idx)} train and {N_HELD_OUT} held-out images "
          f"({', '.join(f'{s} {n}' for s, n in SPLIT_SIZES.items())}) written to {ENV}")


if __name__ == "__main__":
    main()
