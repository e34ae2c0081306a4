"""Train Net on data/train.npz and write model.pt (the file the task scores, with model.py).

The `attack` hook is where training examples can be made adversarial; as given it returns the
images unchanged, so this script does plain training.
"""

import numpy as np
import torch
from torch import nn

from model import Net

EPOCHS = 30
LR = 1e-3
BATCH_SIZE = 64
K_TRAIN = 5


def attack(model: nn.Module, x: torch.Tensor, y: torch.Tensor, k: int) -> torch.Tensor:
    """Return versions of x, changing at most k pixels each, to train on (plain training: x)."""
    return x


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
        print(f"epoch {epoch + 1}: loss {total / len(X):.4f}")
    model.eval()
    with torch.no_grad():
        acc = (model(X).argmax(1) == y).float().mean().item()
    print(f"train accuracy {acc:.3f}")
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
