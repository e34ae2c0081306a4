"""The frozen base model, the 4 cluster LoRA experts and the 24 training tasks (read-only).

Layer l (0 or 1) of the adapted model computes  W0_l h + b_l + sum_e w_e * (h @ A[l][e] @ B[l][e]),
with h the layer's input (x for layer 0, tanh of layer 0's output for layer 1) and w the weights
your route() returns. Experts were built by model-based clustering of 24 per-task LoRAs.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

torch.set_num_threads(1)
HERE = Path(__file__).resolve().parent


def load_base(path: str | Path = HERE / "base.pt") -> nn.ModuleList:
    base = nn.ModuleList([nn.Linear(32, 64), nn.Linear(64, 8)])
    base.load_state_dict(torch.load(path, weights_only=True))
    return base.requires_grad_(False)


def load_experts(path: str | Path = HERE / "experts.pt") -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """A[l]: (E, in, r), B[l]: (E, r, out) for layers l = 0, 1."""
    d = torch.load(path, weights_only=True)
    return d["A"], d["B"]


def forward(base, A, B, x, route) -> torch.Tensor:
    """The routed forward pass the scorer runs (route(x, h, layer) -> (n, E) weights)."""
    h = x
    for layer in range(2):
        w = route(x, h, layer)
        low = torch.einsum("ni,eir->ner", h, A[layer])  # h A_e for every expert
        out = base[layer](h) + torch.einsum("ne,ner,ero->no", w, low, B[layer])
        h = torch.tanh(out) if layer == 0 else out
    return h


class TrainingTasks:
    """The 24 training tasks: x ~ N(mu_k, I), y = base(x) + U_t P_k^T x (k = the task's family)."""

    def __init__(self, path: str | Path = HERE / "tasks.pt", base: nn.ModuleList | None = None) -> None:
        d = torch.load(path, weights_only=True)
        self.P, self.mu, self.family, self.U = d["P"], d["mu"], d["family"], d["U"]
        self.base = base if base is not None else load_base()

    def __len__(self) -> int:
        return len(self.U)

    def sample(self, task: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        k = int(self.family[task])
        x = self.mu[k] + torch.randn(n, self.mu.shape[1], generator=g)
        with torch.no_grad():
            y = self.base[1](torch.tanh(self.base[0](x))) + (x @ self.P[k]) @ self.U[task].T
        return x, y
