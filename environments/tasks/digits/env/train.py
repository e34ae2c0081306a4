"""Train a small MLP on the digits task and write test predictions to submission.csv.

Data: train.csv (label, p0..p63) and test.csv (id, p0..p63): 8x8 grey-level digit images,
flattened, whose pixels have been shuffled by one fixed permutation and made noisy.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

EPOCHS = 12
LR = 0.01
HIDDEN = 48
BATCH_SIZE = 64
SEED = 0

torch.set_num_threads(1)
torch.manual_seed(SEED)

train = np.loadtxt("train.csv", delimiter=",", skiprows=1)
test = np.loadtxt("test.csv", delimiter=",", skiprows=1)
x_train = torch.tensor(train[:, 1:] / 16.0, dtype=torch.float32)
y_train = torch.tensor(train[:, 0], dtype=torch.long)
test_ids = test[:, 0].astype(int)
x_test = torch.tensor(test[:, 1:] / 16.0, dtype=torch.float32)

# hold out a fifth of the training images to report validation accuracy
n_val = len(x_train) // 5
perm = torch.randperm(len(x_train))
val_idx, fit_idx = perm[:n_val], perm[n_val:]

model = nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=LR)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(EPOCHS):
    model.train()
    order = fit_idx[torch.randperm(len(fit_idx))]
    for start in range(0, len(order), BATCH_SIZE):
        batch = order[start : start + BATCH_SIZE]
        optimizer.zero_grad()
        loss = loss_fn(model(x_train[batch]), y_train[batch])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        val_acc = (model(x_train[val_idx]).argmax(1) == y_train[val_idx]).float().mean().item()
    print(f"epoch {epoch + 1}/{EPOCHS}: loss {loss.item():.3f}, validation accuracy {val_acc:.3f}")

with torch.no_grad():
    predictions = model(x_test).argmax(1).numpy()
np.savetxt(
    "submission.csv",
    np.column_stack([test_ids, predictions]),
    delimiter=",",
    header="id,label",
    comments="",
    fmt="%d",
)
print(f"wrote submission.csv with {len(predictions)} predictions")
