"""Learn to sort by a hidden key: a pointer network (one self-attention layer) in PyTorch.

Each example is a set of items (rows of x, padded; mask marks real items). The target is each
item's successor in sorted order (the last item points to itself), as in CLRS's pointer
outputs. The model scores every (item, candidate successor) pair with attention and is trained
with cross-entropy over the candidates. Writes submission.csv (example,item,successor) for the
test sets, which are larger than any training set.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

EPOCHS = 10
LR = 0.001
HIDDEN = 64
BATCH_SIZE = 64
SEED = 0

torch.set_num_threads(1)
torch.manual_seed(SEED)


def load(name: str) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v) for k, v in np.load(name).items()}


class PointerNet(nn.Module):
    def __init__(self, d_in: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.encoder = nn.TransformerEncoderLayer(hidden, nhead=4, dim_feedforward=2 * hidden,
                                                  dropout=0.0, batch_first=True)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits (B, N, N): row i scores each item j as i's successor."""
        h = self.encoder(self.embed(x), src_key_padding_mask=~mask)
        logits = self.query(h) @ self.key(h).transpose(1, 2) / h.shape[-1] ** 0.5
        return logits.masked_fill(~mask[:, None, :], float("-inf"))


def pointer_accuracy(model: nn.Module, data: dict[str, torch.Tensor]) -> float:
    with torch.no_grad():
        predicted = model(data["x"], data["mask"]).argmax(-1)
    return (predicted == data["successor"])[data["mask"]].float().mean().item()


train, val, test = load("train.npz"), load("val.npz"), load("test.npz")
model = PointerNet(train["x"].shape[-1], HIDDEN)
optimizer = torch.optim.Adam(model.parameters(), lr=LR)

n = len(train["x"])
for epoch in range(EPOCHS):
    model.train()
    for idx in torch.randperm(n).split(BATCH_SIZE):
        x, mask, target = train["x"][idx], train["mask"][idx], train["successor"][idx]
        logits = model(x, mask)
        loss = nn.functional.cross_entropy(logits[mask], target[mask])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    print(f"epoch {epoch + 1}: loss {loss.item():.3f}, "
          f"validation pointer accuracy {pointer_accuracy(model, val):.3f}")

model.eval()
with torch.no_grad():
    predicted = model(test["x"], test["mask"]).argmax(-1).numpy()
mask = test["mask"].numpy()
rows = [(e, i, predicted[e, i]) for e in range(len(mask)) for i in np.flatnonzero(mask[e])]
np.savetxt("submission.csv", np.array(rows), delimiter=",", header="example,item,successor",
           comments="", fmt="%d")
print(f"wrote submission.csv with {len(rows)} successor pointers")
