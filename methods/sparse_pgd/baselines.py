"""The weaker l0 attacks sPGD is compared with in the spec's table.

- **One-shot saliency**: one input gradient; each pixel is scored by its best first-order gain
  from setting each channel to 0 or 1 (the better of the two per channel, summed over
  channels), and the top-k pixels are set to their better extremes.
- **Random l0 noise**: k random pixels at random corner colours, ``draws`` times; a sample
  counts as fooled if any draw fools it (the first fooling draw is returned).
"""

from __future__ import annotations

import torch
from torch import nn

from methods.sparse_pgd.sparse_rs import random_corners
from methods.sparse_pgd.streams import SampleStreams, tag

_TAG_NOISE_POS = 21
_TAG_NOISE_COL = 22


def saliency_batch(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, k: int, streams: SampleStreams | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """One-shot first-order attack; ``streams`` is unused (the attack is deterministic)."""
    n, c, h, w = x.shape
    xg = x.clone().requires_grad_(True)
    loss = nn.functional.cross_entropy(model(xg), y, reduction="sum")
    (g,) = torch.autograd.grad(loss, [xg])
    gain0 = g * (0.0 - x)
    gain1 = g * (1.0 - x)
    target = (gain1 > gain0).to(x.dtype)  # the better extreme per channel
    score = torch.maximum(gain0, gain1).sum(dim=1).flatten(1)  # (n, h*w)
    idx = torch.topk(score, k, dim=1).indices
    mask = torch.zeros(n, h * w).scatter_(1, idx, 1.0).view(n, 1, h, w).bool()
    x_adv = torch.where(mask, target, x)
    with torch.no_grad():
        fooled = model(x_adv).argmax(dim=1) != y
    return x_adv.detach(), fooled


@torch.no_grad()
def random_noise_batch(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int,
    streams: SampleStreams,
    *,
    draws: int = 100,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Best of ``draws`` random sparse corner perturbations per sample."""
    n, c, h, w = x.shape
    x_out = x.clone()
    fooled = torch.zeros(n, dtype=torch.bool)
    everyone = torch.ones(n, h * w, dtype=torch.bool)
    for d in range(draws):
        pos = streams.random_subset(tag(_TAG_NOISE_POS, d), everyone, k)
        cand = x.reshape(n, c, h * w).clone()
        cand.scatter_(2, pos[:, None, :].expand(n, c, k), random_corners(streams, tag(_TAG_NOISE_COL, d), k, c))
        cand = cand.view(n, c, h, w)
        hit = (model(cand).argmax(dim=1) != y) & ~fooled
        x_out[hit] = cand[hit]
        fooled |= hit
    return x_out, fooled
