"""The variational family and optimiser eval uses to fit the posterior (see NOTES.md).

Baseline: a full-rank Gaussian, z = m + C u with C dense lower-triangular (d(d+1)/2 free scale
entries), the authors' init (m = 0, diag(C) = sqrt(0.1) on the globals, 1 on the locals) and
Adam at a constant step of 1e-3 with 8 Monte Carlo samples per iteration.
"""

import math

import torch

LR = 1e-3

CONFIG = {
    "optimizer": "adam",  # one of: sgd, adam, adamw, rmsprop (optional "optimizer_kwargs": {...})
    "lr": LR,
    "schedule": "constant",  # one of: constant, step, cosine (optional "schedule_kwargs": {...})
    "n_samples": 8,
}


def init(d_global: int, d_local: int, N: int) -> dict:
    d = d_global + N * d_local
    diag = torch.ones(d, dtype=torch.float64)
    diag[:d_global] = math.sqrt(0.1)
    return {"m": torch.zeros(d, dtype=torch.float64), "L": torch.diag(diag)}


def location_scale(params: dict):
    return params["m"], torch.tril(params["L"])
