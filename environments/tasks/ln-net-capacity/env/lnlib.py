"""Build and train exactly the network net.json describes (read-only; eval uses it too).

net.json:
  layers     list of {"width": int, "norm": {"groups": g} or "none"}: each hidden layer is
             Linear(previous width -> width) followed by its norm. "groups": g applies LayerNorm
             (no affine, eps 1e-5) inside g contiguous groups of width/g neurons (g = 1 is plain
             LayerNorm). A final Linear(last width -> 2) reads out the class logits.
  optimizer  "adam" or "sgd" (sgd uses momentum 0.9)
  lr         learning rate
  schedule   "none" or "cosine" (cosine decay to 0 over the steps)
  steps      full-batch training steps (at most 800)
There are no activation functions: the only nonlinearity is the normalisation.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from methods.ln_net.ln import group_layer_norm

MAX_PARAMS = 1600
MAX_STEPS = 800
IN_DIM, N_CLASSES = 8, 2


class NetSpecError(ValueError):
    """net.json breaks the schema or the budget."""


class GroupNorm(nn.Module):
    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return group_layer_norm(z, self.groups, 1e-5)


def load_spec(path: str | Path = "net.json") -> dict[str, Any]:
    try:
        spec = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise NetSpecError(f"net.json: cannot read it ({err})") from err
    allowed = {"layers", "optimizer", "lr", "schedule", "steps"}
    if not isinstance(spec, dict) or set(spec) - allowed or not set(spec) >= allowed:
        raise NetSpecError(f"net.json: needs exactly the keys {sorted(allowed)}")
    layers = spec["layers"]
    if not isinstance(layers, list) or not layers:
        raise NetSpecError("net.json: layers must be a non-empty list")
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict) or set(layer) != {"width", "norm"}:
            raise NetSpecError(f"net.json: layers[{i}] must be {{'width': int, 'norm': ...}}")
        width, norm = layer["width"], layer["norm"]
        if not isinstance(width, int) or width < 1:
            raise NetSpecError(f"net.json: layers[{i}].width must be a positive integer")
        if norm != "none":
            if not isinstance(norm, dict) or set(norm) != {"groups"}:
                raise NetSpecError(f"net.json: layers[{i}].norm must be 'none' or {{'groups': g}}")
            g = norm["groups"]
            if not isinstance(g, int) or g < 1 or width % g:
                raise NetSpecError(f"net.json: layers[{i}]: groups {g!r} must divide {width}")
    if spec["optimizer"] not in ("adam", "sgd") or spec["schedule"] not in ("none", "cosine"):
        raise NetSpecError("net.json: optimizer must be adam|sgd and schedule none|cosine")
    if not isinstance(spec["lr"], (int, float)) or not 0 < spec["lr"] < 10:
        raise NetSpecError("net.json: lr must be a number in (0, 10)")
    if not isinstance(spec["steps"], int) or not 1 <= spec["steps"] <= MAX_STEPS:
        raise NetSpecError(f"net.json: steps must be an integer in 1..{MAX_STEPS}")
    return spec


def build(spec: dict[str, Any]) -> nn.Sequential:
    modules: list[nn.Module] = []
    width = IN_DIM
    for layer in spec["layers"]:
        modules.append(nn.Linear(width, layer["width"]))
        if layer["norm"] != "none":
            modules.append(GroupNorm(layer["norm"]["groups"]))
        width = layer["width"]
    modules.append(nn.Linear(width, N_CLASSES))
    net = nn.Sequential(*modules)
    n_params = sum(p.numel() for p in net.parameters())
    if n_params > MAX_PARAMS:
        raise NetSpecError(f"net.json: {n_params} parameters (limit {MAX_PARAMS})")
    return net


def train_accuracy(spec: dict[str, Any], X: torch.Tensor, y: torch.Tensor, seed: int) -> dict:
    """Train from PyTorch's default init under manual_seed(seed); full batch, cross-entropy."""
    torch.set_num_threads(1)
    start = time.process_time()
    torch.manual_seed(seed)
    net = build(spec)
    if spec["optimizer"] == "adam":
        opt = torch.optim.Adam(net.parameters(), lr=spec["lr"])
    else:
        opt = torch.optim.SGD(net.parameters(), lr=spec["lr"], momentum=0.9)
    steps = spec["steps"]
    for step in range(steps):
        if spec["schedule"] == "cosine":
            for group in opt.param_groups:
                group["lr"] = spec["lr"] * 0.5 * (1 + math.cos(math.pi * step / steps))
        loss = F.cross_entropy(net(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        acc = float((net(X).argmax(dim=1) == y).float().mean())
    return {"train_acc": acc, "cpu_seconds": time.process_time() - start,
            "n_params": sum(p.numel() for p in net.parameters())}
