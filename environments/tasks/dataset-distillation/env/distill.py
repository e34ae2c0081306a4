"""Baseline: D3S-style distillation to 10 images (one per class) with teacher soft labels.

Starts from one random training image per class and moves the pixels (Adam, lr 0.01, 500 steps)
to minimise, averaged over the three teachers, the KL between the Gaussian of the real training
features and that of the synthetic features (both hidden layers, randomly projected to 16-d),
plus the teachers' cross-entropy on the class labels. Labels Y are the seed-0 teacher's softmax
at temperature 2. Writes distilled.npz with X (10, 64) and Y (10, 10).
"""

import numpy as np
import torch
from model import load_teachers, load_train

from methods.d3s.data import Split
from methods.d3s.distill import DistillConfig, distill

torch.set_num_threads(1)

LR = 0.01
STEPS = 500
CONFIG = DistillConfig(ipc=1, method="d3s", steps=STEPS, lr=LR, soft_tau=2.0, init_seed=0)


def main() -> None:
    X_train, y_train = load_train()
    result = distill(Split(X_train, y_train), load_teachers(), CONFIG)
    np.savez("distilled.npz", X=result.X.numpy(), Y=result.y_soft.numpy())
    print(f"wrote distilled.npz: KL {result.kl_init:.1f} -> {result.kl_final:.1f}, "
          f"pixels [{float(result.X.min()):.2f}, {float(result.X.max()):.2f}]")


if __name__ == "__main__":
    main()
