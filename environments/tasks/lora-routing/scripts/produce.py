"""Submission phase of lora-routing: the workspace's route() on one split's held-out inputs.

Runs in its own sandboxed process (``environments/submission.py``) with the held-out inputs
of the split ``split.txt`` names only (``inputs/x.pt`` for test, ``inputs/x_<split>.pt``; the
targets stay in ``scripts/``). It runs the routed forward pass with the
pristine base and experts and saves the routing weights of both layers for every task;
``eval.py`` recomputes the forward pass from those weights and scores it in another process.
"""

from __future__ import annotations

from pathlib import Path

import torch

from methods._submission import load_submission, save_outputs, split_of
from routed import forward_layer, inputs_file, load_model


def produce(workspace: Path, here: Path, out: Path) -> None:
    torch.set_num_threads(1)
    base, A, B = load_model(workspace)
    module = load_submission(workspace, "route.py", name="route")
    weights = {}
    for i, x in enumerate(torch.load(here / "inputs" / inputs_file(split_of(here)), weights_only=True)):
        h = x
        with torch.no_grad():
            for layer in range(2):
                w = module.route(x.clone(), h.clone(), layer)
                w = torch.as_tensor(w).detach().to(h.dtype)
                weights[f"w{i}_{layer}"] = w
                h = forward_layer(base, A, B, h, w, layer)
    save_outputs(out, **weights)
