"""Submission phase of poglm-hidden-neurons: the workspace's posterior Q on one split's spikes.

Runs in its own sandboxed process (``environments/submission.py``) with the visible held-out
spikes of the split ``split.txt`` names only (``inputs/x_<split>.npy``). A non-autoregressive Q gives its rates once, and ``eval.py`` draws
the hidden spikes from them itself. An autoregressive Q needs each step's draw before its next
rates, so the draws happen here (200 per sequence) and both rates and draws are saved: for such
a Q the sampling runs in the submission's process (a known limit, see ``eval.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from methods._submission import load_submission, save_outputs, split_of

EVAL_SAMPLES, N_HID, T = 200, 2, 100


def _checked(r, shape):
    if not isinstance(r, torch.Tensor) or tuple(r.shape) != shape:
        raise ValueError(f"Q.rates must return a tensor of shape {shape}, got {getattr(r, 'shape', type(r))}")
    return r.detach().to(torch.float64)


@torch.no_grad()
def produce(workspace: Path, here: Path, out: Path) -> None:
    torch.set_num_threads(1)
    q = load_submission(workspace, "q.py").Q()
    if not (workspace / "q.pt").exists():
        raise FileNotFoundError("q.pt is missing (run train.py)")
    q.load_state_dict(torch.load(workspace / "q.pt", map_location="cpu", weights_only=True))
    q.eval()
    x = torch.from_numpy(np.load(here / "inputs" / f"x_{split_of(here)}.npy"))
    B = x.shape[0]
    if not getattr(q, "autoregressive", False):
        save_outputs(out, lam=_checked(q.rates(x, None), (B, T, N_HID)))
        return
    lam, z = sample_autoregressive(q, x, EVAL_SAMPLES, torch.Generator().manual_seed(12345))
    save_outputs(out, lam=lam, z=z)


@torch.no_grad()
def sample_autoregressive(q, x: torch.Tensor, S: int, gen: torch.Generator):
    """(rates, draws), each (S*B, T, hidden): step t's rates see the draws before t."""
    B = x.shape[0]
    xs = x.repeat(S, 1, 1)
    z = torch.zeros(S * B, T, N_HID, dtype=torch.float64)
    lam = torch.zeros_like(z)
    for t in range(T):
        lam[:, t] = _checked(q.rates(xs, z[:, :t].clone()), (S * B, T, N_HID))[:, t]
        z[:, t] = torch.poisson(lam[:, t].clamp_min(1e-300), generator=gen)
    return lam, z
