"""Train a 2-layer GCN on each graph in data/ and write submission_{i}.csv (node,class).

The graphs are done in order, data/graph0.npz first, under one torch seed.

Each data/graph{i}.npz holds edges (2, E) (undirected, each edge once), X (n, d) node features,
y (n,) labels (-1 where unknown), and boolean masks train / val / test.
"""

import csv
from pathlib import Path

import numpy as np
import torch
from torch import nn

EPOCHS = 150
HIDDEN = 64
LR = 0.01
WEIGHT_DECAY = 5e-4
DROPOUT = 0.5


def normalized_adjacency(edges: np.ndarray, n: int) -> torch.Tensor:
    """D^-1/2 (A + I) D^-1/2 as a sparse tensor."""
    i = np.concatenate([edges[0], edges[1], np.arange(n)])
    j = np.concatenate([edges[1], edges[0], np.arange(n)])
    deg = np.bincount(i, minlength=n).astype(np.float64)
    vals = 1.0 / np.sqrt(deg[i] * deg[j])
    idx = torch.from_numpy(np.stack([i, j]))
    return torch.sparse_coo_tensor(idx, torch.from_numpy(vals).float(), (n, n), check_invariants=True).coalesce()


class GCN(nn.Module):
    def __init__(self, d_in: int, n_classes: int) -> None:
        super().__init__()
        self.l1 = nn.Linear(d_in, HIDDEN)
        self.l2 = nn.Linear(HIDDEN, n_classes)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        x = nn.functional.dropout(x, DROPOUT, self.training)
        h = torch.relu(torch.sparse.mm(adj, self.l1(x)))
        h = nn.functional.dropout(h, DROPOUT, self.training)
        return torch.sparse.mm(adj, self.l2(h))


def solve(path: str, out: str) -> None:
    data = np.load(path)
    x = torch.from_numpy(data["X"]).float()
    y = torch.from_numpy(data["y"]).long()
    train, val, test = (torch.from_numpy(data[k]) for k in ("train", "val", "test"))
    adj = normalized_adjacency(data["edges"], len(x))
    n_classes = int(y.max()) + 1
    model = GCN(x.shape[1], n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    for _ in range(EPOCHS):
        model.train()
        loss = nn.functional.cross_entropy(model(x, adj)[train], y[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(x, adj).argmax(1)
    print(f"{path}: validation accuracy {(pred[val] == y[val]).float().mean():.3f}")
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["node", "class"])
        for v in torch.nonzero(test).squeeze(1).tolist():
            w.writerow([v, int(pred[v])])


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    for i in range(len(list(Path("data").glob("graph*.npz")))):
        solve(f"data/graph{i}.npz", f"submission_{i}.csv")


if __name__ == "__main__":
    main()
