"""Sparse-PGD (sPGD): a white-box attack under an l0 budget of k pixels.

Zhong, Huang & Liu, ICML 2024 (authors' code: github.com/CityU-MLO/sPGD, ``autoattack/spgd.py``).

The perturbation is delta = p * M_k(sigmoid(m)): a dense magnitude p (c, h, w) and one mask
logit per pixel m (1, h, w), whose binary top-k mask M_k is broadcast over channels. The forward
pass always uses the binary mask, so ||delta||_0 <= k (in pixels) holds at every iterate; only the
backward pass is relaxed (:class:`SparsePerturbation`).

Choices the spec leaves to the implementation, recorded here:

- **Loss.** ``"ce"`` (default) is plain cross-entropy, as in the report's reading of commit
  6624853. ``"adaptive"`` follows the snapshot of ``autoattack/spgd.py`` at commit a356d0c: the
  unnormalised margin loss (best other logit minus correct logit) for samples whose margin
  (correct minus best other) is below 0.5, CE for the rest.
- **Mask step.** beta * sqrt(h*w) * g_m / ||g_m||_2 per sample: the code takes the sizes from the
  1-channel mask (the report writes sqrt(c*h*w)). The step is skipped below ||g_m|| = 2e-10.
- **Restart.** Only m is redrawn (and the sample's stored gradients zeroed); p is kept, as the
  code does, although its comment says both are reset.
- **Randomness.** Every draw comes from the sample's own stream (:mod:`.streams`), so a sample's
  trajectory does not depend on its batch; this is what lets the sAA cascade be checked against
  its stand-alone stages.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from methods.sparse_pgd.streams import SampleStreams, tag

LossKind = Literal["ce", "adaptive"]

_TAG_INIT_P = 1
_TAG_INIT_M = 2
_TAG_RESTART = 3
GRAD_NORM_FLOOR = 2e-10
ADAPTIVE_MARGIN = 0.5


def topk_mask(m: torch.Tensor, k: int) -> torch.Tensor:
    """Binary (B, 1, h, w) mask of the k largest mask logits per sample (= top-k of sigmoid)."""
    flat = m.flatten(1)
    idx = torch.topk(flat, min(k, flat.shape[1]), dim=1).indices
    return torch.zeros_like(flat).scatter_(1, idx, 1.0).view_as(m)


class SparsePerturbation(torch.autograd.Function):
    """delta = p * M_k(sigmoid(m)) with the paper's two backward passes.

    Both variants send g_m = (sum_c g_delta * p) * s(1-s) to the mask logits, where s = sigmoid(m).
    They differ only in the magnitude's gradient: *unprojected* g_p = g_delta * s keeps a signal
    on pixels outside the support; *projected* g_p = g_delta * M_k is the true gradient.
    """

    @staticmethod
    def forward(ctx, p: torch.Tensor, m: torch.Tensor, k: int, projected: bool):  # type: ignore[override]
        s = torch.sigmoid(m)
        mask = topk_mask(m, k)
        ctx.save_for_backward(p, s, mask)
        ctx.projected = projected
        return p * mask

    @staticmethod
    def backward(ctx, g: torch.Tensor):  # type: ignore[override]
        p, s, mask = ctx.saved_tensors
        g_p = g * (mask if ctx.projected else s)
        g_s = (g * p).sum(dim=1, keepdim=True)
        return g_p, g_s * s * (1.0 - s), None, None


def per_sample_loss(logits: torch.Tensor, y: torch.Tensor, kind: LossKind = "ce") -> torch.Tensor:
    """The loss each sample's attack maximises; samples never interact."""
    ce = nn.functional.cross_entropy(logits, y, reduction="none")
    if kind == "ce":
        return ce
    if kind != "adaptive":
        raise ValueError(f"loss: unknown loss {kind!r}; choose 'ce' or 'adaptive'")
    correct = logits.gather(1, y[:, None]).squeeze(1)
    other = logits.scatter(1, y[:, None], float("-inf")).amax(dim=1)
    margin = correct - other
    return torch.where(margin < ADAPTIVE_MARGIN, -margin, ce)


def _forward_backward(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    p: torch.Tensor,
    m: torch.Tensor,
    k: int,
    projected: bool,
    loss: LossKind,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One pass at (p, m): (x_adv, per-sample loss, predictions, g_p, g_m, binary mask)."""
    p = p.detach().requires_grad_(True)
    m = m.detach().requires_grad_(True)
    delta = SparsePerturbation.apply(p, m, k, projected)
    x_adv = x + delta
    logits = model(x_adv)
    losses = per_sample_loss(logits, y, loss)
    g_p, g_m = torch.autograd.grad(losses.sum(), [p, m])
    return (
        x_adv.detach(),
        losses.detach(),
        logits.detach().argmax(dim=1),
        g_p,
        g_m,
        topk_mask(m.detach(), k),
    )


def spgd_batch(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int,
    streams: SampleStreams,
    *,
    iters: int = 100,
    projected: bool = False,
    eps: float = 1.0,
    alpha: float = 0.25,
    beta: float = 0.25,
    patience: int = 3,
    loss: LossKind = "ce",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attack one batch of clean-correct samples; returns (x_adv, fooled).

    Fooled samples leave the active set with their first fooling iterate; survivors return their
    highest-loss iterate. ``alpha`` is relative to ``eps`` (step alpha * eps), as in the paper.
    """
    n, c, h, w = x.shape
    x_out = x.clone()
    fooled = torch.zeros(n, dtype=torch.bool)
    if n == 0:
        return x_out, fooled
    step_p = alpha * eps
    step_m = beta * math.sqrt(h * w)

    p = (2.0 * streams.uniform(tag(_TAG_INIT_P), c * h * w) - 1.0).view(n, c, h, w) * eps
    p = torch.minimum(torch.maximum(p, -x), 1.0 - x)
    m = streams.normal(tag(_TAG_INIT_M), h * w).view(n, 1, h, w)

    act = torch.arange(n)  # batch positions of the active samples
    xa, ya, st = x, y, streams
    best_loss = torch.full((n,), float("-inf"))
    unchanged = torch.zeros(n, dtype=torch.int64)
    prev_mask: torch.Tensor | None = None

    for it in range(iters + 1):
        if it > 0:
            gm_norm = g_m.flatten(1).norm(dim=1)
            scale = torch.where(
                gm_norm >= GRAD_NORM_FLOOR, step_m / gm_norm.clamp_min(GRAD_NORM_FLOOR), 0.0
            )
            m = m + scale.view(-1, 1, 1, 1) * g_m
            p = (p + step_p * g_p.sign()).clamp(-eps, eps)
            p = torch.minimum(torch.maximum(p, -xa), 1.0 - xa)
        x_adv, losses, pred, g_p, g_m, mask = _forward_backward(
            model, xa, ya, p, m, k, projected, loss
        )
        better = losses > best_loss[act]
        best_loss[act[better]] = losses[better]
        x_out[act[better]] = x_adv[better]
        hit = pred != ya
        x_out[act[hit]] = x_adv[hit]
        fooled[act[hit]] = True
        if prev_mask is not None:
            same = (mask == prev_mask).flatten(1).all(dim=1)
            unchanged[act] = torch.where(same, unchanged[act] + 1, torch.zeros_like(same, dtype=torch.int64))
        prev_mask = mask
        if it == iters or bool(hit.all()):
            break
        if bool(hit.any()):
            keep = ~hit
            act, xa, ya, p, m, g_p, g_m, prev_mask = (
                t[keep] for t in (act, xa, ya, p, m, g_p, g_m, prev_mask)
            )
            st = st.subset(keep.nonzero().squeeze(1))
        restart = unchanged[act] >= patience
        if restart.any():
            r = restart.nonzero().squeeze(1)
            m[r] = st.subset(r).normal(tag(_TAG_RESTART, it), h * w).view(-1, 1, h, w)
            g_m[r] = 0.0
            g_p[r] = 0.0
            unchanged[act[r]] = 0
    return x_out, fooled
