"""Build the task's data: a secretly transformed digits split, and the three teachers.

sklearn ships the digits, test images included, so the split is made unmatchable: every image
(train and test alike) gets the same secret pixel permutation, a per-pixel gain in [0.75, 1.25]
and offset in [−0.15, 0.15] (so that sorting an image's pixels does not undo the permutation),
and N(0, 0.03²) noise. The
1200 training images (with labels) and the teachers trained on them go to ../env/; the 597
held-out images stay here, next to eval.py, carved by a seeded permutation into the three
private splits (task.toml [splits]): 149 for search, 149 for select and the other 299 for test,
in private_{search,select,test}.npz with their ``ids`` (positions among the 597). The digits
cannot grow, so the test split is half of what it was (task.toml's baseline and the anchors
re-measured, anchors v2).
Offline and deterministic.
"""

from pathlib import Path

import numpy as np
import torch

from methods.d3s.data import load_digits_split
from methods.d3s.models import train_teacher

TRANSFORM_SEED = 52_711
NOISE = 0.03
TEACHER_SEEDS = (0, 10, 11)
SPLIT_SEED = 38_038


def transformed_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test), transformed; noise drawn for train, then test."""
    split = load_digits_split()
    rng = np.random.default_rng(TRANSFORM_SEED)
    perm = rng.permutation(64)
    gain = rng.uniform(0.75, 1.25, 64)
    offset = rng.uniform(-0.15, 0.15, 64)

    def apply(X: np.ndarray) -> np.ndarray:
        return X[:, perm] * gain + offset + rng.normal(0, NOISE, X.shape)

    X_train = apply(split.X_train.numpy())
    X_test = apply(split.X_test.numpy())
    return (X_train.astype(np.float32), split.y_train.numpy(), X_test.astype(np.float32),
            split.y_test.numpy())


def carve(n_held_out: int) -> dict[str, np.ndarray]:
    """The held-out positions of each split (sorted): a seeded permutation whose first quarter
    is search, second select, and the rest (half) test."""
    order = np.random.default_rng(SPLIT_SEED).permutation(n_held_out)
    q = n_held_out // 4
    return {"search": np.sort(order[:q]), "select": np.sort(order[q:2 * q]),
            "test": np.sort(order[2 * q:])}


def main() -> None:
    torch.set_num_threads(1)
    here = Path(__file__).resolve().parent
    env = here.parent / "env"
    X_train, y_train, X_test, y_test = transformed_split()
    (env / "data").mkdir(parents=True, exist_ok=True)
    np.savez(env / "data" / "train.npz", X_train=X_train, y_train=y_train)
    for name, ids in carve(len(X_test)).items():
        np.savez(here / f"private_{name}.npz", X_test=X_test[ids], y_test=y_test[ids], ids=ids)
    (env / "teachers").mkdir(exist_ok=True)
    X, y = torch.from_numpy(X_train), torch.from_numpy(y_train)
    for seed in TEACHER_SEEDS:
        net = train_teacher(X, y, seed, bn=True)
        torch.save(net.state_dict(), env / "teachers" / f"teacher_s{seed}.pt")
    print("wrote env/data/train.npz, env/teachers/*.pt, scripts/private_{search,select,test}.npz")


if __name__ == "__main__":
    main()
