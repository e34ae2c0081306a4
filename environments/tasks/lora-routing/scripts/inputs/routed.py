"""The routed forward pass, shared by both phases of lora-routing (no submitted code here)."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


def load_model(folder: Path):
    base = nn.ModuleList([nn.Linear(32, 64), nn.Linear(64, 8)])
    base.load_state_dict(torch.load(Path(folder) / "base.pt", weights_only=True))
    base.requires_grad_(False)
    experts = torch.load(Path(folder) / "experts.pt", weights_only=True)
    return base, experts["A"], experts["B"]


def forward_layer(base, A, B, h: torch.Tensor, w: torch.Tensor, layer: int) -> torch.Tensor:
    low = torch.einsum("ni,eir->ner", h, A[layer])
    out = base[layer](h) + torch.einsum("ne,ner,ero->no", w, low, B[layer])
    return torch.tanh(out) if layer == 0 else out


def inputs_file(split: str) -> str:
    """A private split's held-out inputs, in this folder (test's kept its name from before the
    splits). No targets here: they stay in ``scripts/``."""
    return "x.pt" if split == "test" else f"x_{split}.pt"
