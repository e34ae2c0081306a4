"""Build the digits task's data from scikit-learn's bundled 8x8 digits, made unmatchable.

scikit-learn ships the same images, so the held-out labels could be looked up by matching a test
image against the bundled copy. To prevent that, every image goes through a secret, seed-fixed
transform before the split: a random shift of up to one pixel, a random contrast, Gaussian pixel
noise, and one fixed permutation of the 64 pixel positions (the same for every image, so a model
can still learn, but a bundled image no longer lines up with its transformed copy).

Writes (current directory = the task copy's ``scripts/``):
  ../env/train.csv   label,p0..p63       (the actor's training data)
  ../env/test.csv    id,p0..p63          (test images, no labels)
  test_labels.csv    id,label            (private; read by eval.py)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

SEED = 80_613_947  # secret: fixes the transform and the split
N_TEST = 700
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
    test_idx, train_idx = order[:N_TEST], order[N_TEST:]

    ENV.mkdir(parents=True, exist_ok=True)
    pixel_cols = ",".join(f"p{i}" for i in range(64))
    train = np.column_stack([y[train_idx], x[train_idx]])
    np.savetxt(ENV / "train.csv", train, delimiter=",", header="label," + pixel_cols,
               comments="", fmt=["%d"] + ["%.2f"] * 64)
    ids = np.arange(len(test_idx))
    test = np.column_stack([ids, x[test_idx]])
    np.savetxt(ENV / "test.csv", test, delimiter=",", header="id," + pixel_cols,
               comments="", fmt=["%d"] + ["%.2f"] * 64)
    labels = np.column_stack([ids, y[test_idx]])
    np.savetxt(HERE / "test_labels.csv", labels, delimiter=",", header="id,label",
               comments="", fmt="%d")
    print(f"digits: {len(train_idx)} train, {len(test_idx)} test images written to {ENV}")


if __name__ == "__main__":
    main()
