"""Reference solution for clrs-sorting: learn the key, let sorting do the rest.

Sorting is a comparison algorithm, so the part worth learning is the comparison. A small MLP
maps one item to a scalar score, trained with a pairwise logistic (RankNet) loss on every pair
of items in a training set (the order is recovered by following the successor pointers). At
test time items are sorted by score and each points to the next: the procedure is the same
for any set size, so it generalises to sets larger than any seen in training, as long as the
learned score orders items the way the hidden key does.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

EPOCHS = 15
LR = 0.003
HIDDEN = 64
BATCH_SIZE = 64
SEED = 0

torch.set_num_threads(1)
torch.manual_seed(SEED)


def load(name: str) -> dict[str, np.ndarray]:
    return dict(np.load(name).items())


def ranks_from_successors(successor: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Position of every item in sorted order (-1 on padding), by walking the pointers."""
    ranks = np.full(successor.shape, -1, dtype=np.int64)
    for e in range(len(successor)):
        items = np.flatnonzero(mask[e])
        pointed_to = {int(successor[e, i]) for i in items if successor[e, i] != i}
        (current,) = set(items.tolist()) - pointed_to  # the smallest item
        for position in range(len(items)):
            ranks[e, current] = position
            current = int(successor[e, current])
    return ranks


def successors_from_scores(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    successor = np.full(mask.shape, -1, dtype=np.int64)
    for e in range(len(mask)):
        items = np.flatnonzero(mask[e])
        order = items[np.argsort(scores[e, items], kind="stable")]
        successor[e, order[:-1]] = order[1:]
        successor[e, order[-1]] = order[-1]
    return successor


train, val, test = load("train.npz"), load("val.npz"), load("test.npz")
x = torch.from_numpy(train["x"])
mask = torch.from_numpy(train["mask"])
ranks = torch.from_numpy(ranks_from_successors(train["successor"], train["mask"])).float()

scorer = nn.Sequential(
    nn.Linear(x.shape[-1], HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
    nn.Linear(HIDDEN, 1),
)
optimizer = torch.optim.Adam(scorer.parameters(), lr=LR)
schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, EPOCHS)


def scores_of(data: dict[str, np.ndarray]) -> np.ndarray:
    with torch.no_grad():
        return scorer(torch.from_numpy(data["x"])).squeeze(-1).numpy()


def pointer_accuracy(data: dict[str, np.ndarray]) -> float:
    predicted = successors_from_scores(scores_of(data), data["mask"])
    return float((predicted == data["successor"])[data["mask"]].mean())


for epoch in range(EPOCHS):
    for idx in torch.randperm(len(x)).split(BATCH_SIZE):
        s = scorer(x[idx]).squeeze(-1)                       # (B, N)
        r, m = ranks[idx], mask[idx]
        diff = s[:, :, None] - s[:, None, :]                 # s_i - s_j
        above = (r[:, :, None] > r[:, None, :]).float()      # 1 where i sorts after j
        pair = m[:, :, None] & m[:, None, :] & (r[:, :, None] != r[:, None, :])
        loss = nn.functional.binary_cross_entropy_with_logits(diff[pair], above[pair])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    schedule.step()
    print(f"epoch {epoch + 1}: loss {loss.item():.4f}, "
          f"validation pointer accuracy {pointer_accuracy(val):.3f}")

predicted = successors_from_scores(scores_of(test), test["mask"])
rows = [(e, i, predicted[e, i]) for e in range(len(predicted))
        for i in np.flatnonzero(test["mask"][e])]
np.savetxt("submission.csv", np.array(rows), delimiter=",", header="example,item,successor",
           comments="", fmt="%d")
print(f"wrote submission.csv with {len(rows)} successor pointers")
