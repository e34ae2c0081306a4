"""Reference: the structured (bordered block-diagonal) family of Ko, Kim, Kim & Gardner (ICML 2024).

C = [[L_G, 0], [B, blockdiag(L_1..L_N)]]: a dense lower-triangular L_G on the globals, a dense
border B_n from each group's locals onto the globals, and a lower-triangular L_n per group.
O(N) scale parameters instead of O(N^2), and it still contains the exact posterior of this
model, so Adam can take a larger step (10^-2.25) without the jitter of d^2 entries.
"""

import math

import torch

CONFIG = {"optimizer": "adam", "lr": 10 ** -2.25, "schedule": "constant", "n_samples": 8}


def init(d_global: int, d_local: int, N: int) -> dict:
    dG, dL = d_global, d_local
    return {
        "m": torch.zeros(dG + N * dL, dtype=torch.float64),
        "LG": math.sqrt(0.1) * torch.eye(dG, dtype=torch.float64),
        "B": torch.zeros(N, dL, dG, dtype=torch.float64),
        "L": torch.eye(dL, dtype=torch.float64).repeat(N, 1, 1),
    }


def location_scale(params: dict):
    LG, B, L = params["LG"], params["B"], params["L"]
    N, dL, dG = B.shape
    top = torch.cat([torch.tril(LG), torch.zeros(dG, N * dL, dtype=LG.dtype)], dim=1)
    bottom = torch.cat([B.reshape(N * dL, dG), torch.block_diag(*torch.tril(L))], dim=1)
    return params["m"], torch.cat([top, bottom], dim=0)
