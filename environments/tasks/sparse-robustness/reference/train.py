"""Reference solution: sparse adversarial training (sAT) through the `attack` hook.

Each batch is attacked with 10 iterations of sparse-PGD at k_train = 5 pixels, with the
projected or the unprojected gradient drawn at random per batch, and the model trains on
CE(f(x_adv), y). Everything else is the given train.py.
"""

import numpy as np
import torch
from torch import nn

from methods.sparse_pgd.spgd import spgd_batch
from methods.sparse_pgd.streams import SampleStreams, tag
from model import Net

EPOCHS = 30
LR = 1e-3
BATCH_SIZE = 64
K_TRAIN = 5
ATTACK_ITERS = 10

_calls = 0


def attack(model: nn.Module, x: torch.Tensor, y: torch.Tensor, k: int) -> torch.Tensor:
    """sPGD examples (proj or unproj at random); the model is already in eval mode."""
    global _calls
    _calls += 1
    projected = bool(torch.rand(()) < 0.5)
    streams = SampleStreams(tag(0, _calls), torch.arange(len(x)))
    x_adv, _ = spgd_batch(model, x, y, k, streams, iters=ATTACK_ITERS, projected=projected)
    return x_adv


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = np.load("data/train.npz")
    X = torch.from_numpy(data["X"]).float()
    y = torch.from_numpy(data["y"]).long()
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    for epoch in range(EPOCHS):
        perm = torch.randperm(len(X))
        total = 0.0
        for start in range(0, len(X), BATCH_SIZE):
            idx = perm[start : start + BATCH_SIZE]
            model.eval()
            x_train = attack(model, X[idx], y[idx], K_TRAIN)
            model.train()
            loss = nn.functional.cross_entropy(model(x_train), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        print(f"epoch {epoch + 1}: adversarial loss {total / len(X):.4f}")
    model.eval()
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
