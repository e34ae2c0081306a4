"""Per-module local losses: plain local learning and the SGR reconstruction.

A *rule* maps a :class:`ModuleContext` to ``(loss, forward)`` or ``(loss, forward, logs)``:
``forward`` is whatever the next module receives as ``ctx.prev`` (detached), ``logs`` a dict of
floats averaged into the epoch log. The loop in :mod:`.training` and the ``local-learning``
task's harness call rules the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F

Distance = Literal["l2", "cosine"]


@dataclass
class ModuleContext:
    h_in: torch.Tensor  # detached input, requires grad
    h_out: torch.Tensor  # f_l(h_in)
    logits: torch.Tensor  # g_l(h_out)
    y: torch.Tensor
    index: int  # 0-based module index
    depth: int
    prev: Any = None  # what module index-1 passed forward (None for the first module)

    @property
    def is_first(self) -> bool:
        return self.index == 0

    @property
    def is_last(self) -> bool:
        return self.index == self.depth - 1


def local_rule(ctx: ModuleContext) -> tuple[torch.Tensor, None]:
    """Plain non-greedy local learning: mean cross-entropy of this module's head, nothing passed."""
    return F.cross_entropy(ctx.logits, ctx.y), None


def gradient_distance(g_in: torch.Tensor, g_out: torch.Tensor, distance: Distance) -> torch.Tensor:
    """Per-sample distance averaged over the batch: ‖·‖² (``l2``) or 1 - cosine (``cosine``)."""
    if distance == "l2":
        return (g_in - g_out).pow(2).sum(dim=1).mean()
    return (1.0 - F.cosine_similarity(g_in, g_out, dim=1, eps=1e-12)).mean()


def sgr_penalty(
    h_in: torch.Tensor, logits: torch.Tensor, y: torch.Tensor, g_out_prev: torch.Tensor,
    distance: Distance = "l2",
) -> torch.Tensor:
    """Distance between G^in = ∂(Σ_i CE_i)/∂h_in and the constant G^out of the previous module.

    ``create_graph=True`` keeps G^in differentiable in this module's parameters (double
    backprop), so the penalty trains θ_l and g_l only; ``h_in`` is detached, so nothing flows
    back into module l-1 and gradient isolation holds.
    """
    (g_in,) = torch.autograd.grad(F.cross_entropy(logits, y, reduction="sum"), h_in,
                                  create_graph=True)
    return gradient_distance(g_in, g_out_prev, distance)


def sgr_rule(ctx: ModuleContext, lam: float = 1.0, distance: Distance = "l2"):
    """CE + λ·distance(G^in_l, G^out_{l-1}); passes G^out_l (from this module's CE) forward.

    [unverified reconstruction] Weighting a per-sample-mean penalty against a batch-mean CE is
    the spec's choice; the paper's weighting and normalisation are unknown.
    """
    loss = F.cross_entropy(ctx.logits, ctx.y)  # the same term as local_rule, bit for bit
    batch = ctx.y.shape[0]
    wanted = [] if ctx.is_first else [ctx.h_in]
    if not ctx.is_last:
        wanted.append(ctx.h_out)
    # gradients of the *summed* CE (= batch x mean), so each row is a per-sample gradient
    grads = [batch * g for g in torch.autograd.grad(
        loss, wanted, create_graph=not ctx.is_first, retain_graph=True)] if wanted else []
    penalty = torch.zeros(())
    if not ctx.is_first:
        g_in = grads.pop(0)
        penalty = gradient_distance(g_in, ctx.prev, distance)
        loss = loss + lam * penalty
    forward = grads.pop(0).detach() if not ctx.is_last else None
    return loss, forward, {"penalty": penalty.item()}
