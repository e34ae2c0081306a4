"""Classify papers into subject areas: an MLP on each paper's own features.

graph.npz holds the citation graph (see research_problem): node features, years, undirected
edges, labels (-1 for test papers) and the train/val/test node indices. This baseline ignores
the edges. Writes submission.csv (node,label) for the test papers.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

EPOCHS = 100
LR = 0.01
HIDDEN = 64
SEED = 0

torch.set_num_threads(1)
torch.manual_seed(SEED)

data = np.load("graph.npz")
x = torch.tensor(data["features"])
y = torch.tensor(data["labels"])
train_idx = torch.tensor(data["train_idx"])
val_idx = torch.tensor(data["val_idx"])
test_idx = data["test_idx"]
n_classes = int(y.max()) + 1

model = nn.Sequential(nn.Linear(x.shape[1], HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, n_classes))
optimizer = torch.optim.Adam(model.parameters(), lr=LR)
for epoch in range(EPOCHS):
    model.train()
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[train_idx]), y[train_idx])
    loss.backward()
    optimizer.step()
    if (epoch + 1) % 20 == 0:
        model.eval()
        with torch.no_grad():
            val_acc = (model(x[val_idx]).argmax(1) == y[val_idx]).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}, validation accuracy {val_acc:.3f}")

model.eval()
with torch.no_grad():
    predictions = model(x[test_idx]).argmax(1).numpy()
np.savetxt("submission.csv", np.column_stack([test_idx, predictions]), delimiter=",",
           header="node,label", comments="", fmt="%d")
print(f"wrote submission.csv with {len(predictions)} predictions")
