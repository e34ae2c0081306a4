"""Proxy score: 3 students (public seeds) trained on distilled.npz, scored on the 1200 TRAINING images.

Eval uses 5 private student seeds and private test images; this proxy only tracks progress.
Usage: python distill.py && python run_dev.py
"""

import numpy as np
import torch
from model import load_train

from methods.d3s.students import student_accuracies

torch.set_num_threads(1)


def main() -> None:
    with np.load("distilled.npz") as z:
        X, Y = torch.from_numpy(z["X"]).float(), torch.from_numpy(z["Y"]).float()
    X_train, y_train = load_train()
    accs, _ = student_accuracies(X, Y, X_train, y_train, seeds=[1, 2, 3])
    print(f"train-image accuracy per student: {[round(a, 3) for a in accs]}, mean {sum(accs) / 3:.3f}")


if __name__ == "__main__":
    main()
