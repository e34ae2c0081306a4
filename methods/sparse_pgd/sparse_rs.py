"""Sparse-RS, the black-box l0 attack of Croce et al. (its L0 variant), as sAA's last stage.

Settings follow the copy of ``rs_attacks.py`` in the sPGD repository: k random pixels start at
random corners of {0,1}^c; at query i, n_i = max(floor(p_i * k), 1) perturbed pixels go back to
their clean value and as many clean pixels get new corner colours (a colour different from the
current one when n_i = 1); the candidate is kept if CE rises or it is misclassified. p_i follows
the piecewise schedule below with i rescaled to a 10k-query budget. The first evaluation counts
as a query, so ``queries`` forward passes are made in all.

Unlike the original, which draws one set of positions for the whole batch per query, every
sample draws its own positions from its own stream (:mod:`.streams`); that keeps a sample's
outcome independent of its batch, and the loop over images is vectorised away.
"""

from __future__ import annotations

import torch
from torch import nn

from methods.sparse_pgd.streams import SampleStreams, tag

_TAG_INIT_POS = 11
_TAG_INIT_COL = 12
_TAG_REMOVE = 13
_TAG_ADD = 14
_TAG_COLOUR = 15
_TAG_COLOUR_OTHER = 16

P_INIT = 0.8
_SCHEDULE = (  # (last rescaled query index, divisor of p_init)
    (10, 1),
    (50, 2),
    (200, 4),
    (500, 5),
    (1000, 6),
    (2000, 8),
    (4000, 10),
    (6000, 12),
    (8000, 15),
)


def p_selection(i: int, queries: int, p_init: float = P_INIT) -> float:
    """Fraction of the k pixels resampled at query i (Croce et al.'s L0 schedule)."""
    it = int(i / queries * 10000)
    for last, div in _SCHEDULE:
        if it <= last:
            return p_init / div
    return p_init / 20


def random_corners(streams: SampleStreams, stream_tag: int, count: int, c: int) -> torch.Tensor:
    """(B, c, count) colours drawn uniformly from the corners {0,1}^c."""
    bits = streams.bits(stream_tag, count * c) & 1
    return bits.view(-1, count, c).transpose(1, 2).to(torch.float32)


def _corner_code(values: torch.Tensor) -> torch.Tensor:
    """(B, c) colours -> corner index sum_ch bit << ch, or -1 when not a corner."""
    is_corner = ((values == 0) | (values == 1)).all(dim=1)
    weights = 2 ** torch.arange(values.shape[1], dtype=torch.int64)
    code = (values.round().to(torch.int64) * weights).sum(dim=1)
    return torch.where(is_corner, code, torch.full_like(code, -1))


def _differing_corner(streams: SampleStreams, i: int, current: torch.Tensor) -> torch.Tensor:
    """(B, c) corner colours unlike ``current`` (B, c): uniform over the other corners."""
    c = current.shape[1]
    n_corners = 2**c
    cur = _corner_code(current)
    other = streams.randint(tag(_TAG_COLOUR_OTHER, i), 1, n_corners - 1).squeeze(1)
    other = other + (other >= cur).to(torch.int64)
    anyc = streams.randint(tag(_TAG_COLOUR, i), 1, n_corners).squeeze(1)
    code = torch.where(cur >= 0, other, anyc)
    bits = (code[:, None] >> torch.arange(c, dtype=torch.int64)) & 1
    return bits.to(torch.float32)


@torch.no_grad()
def sparse_rs_batch(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int,
    streams: SampleStreams,
    *,
    queries: int = 1000,
    p_init: float = P_INIT,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attack one batch of clean-correct samples; returns (x_adv, fooled)."""
    n, c, h, w = x.shape
    npix = h * w
    if k >= npix:
        raise ValueError(f"k: Sparse-RS needs k < h*w = {npix}")
    x_flat = x.reshape(n, c, npix)
    fooled = torch.zeros(n, dtype=torch.bool)
    if n == 0 or queries < 1:
        return x.clone(), fooled

    pos = streams.random_subset(tag(_TAG_INIT_POS), torch.ones(n, npix, dtype=torch.bool), k)
    perturbed = torch.zeros(n, npix, dtype=torch.bool).scatter_(1, pos, True)
    best = x_flat.clone()
    best.scatter_(2, pos[:, None, :].expand(n, c, k), random_corners(streams, tag(_TAG_INIT_COL), k, c))
    logits = model(best.view(n, c, h, w))
    best_loss = nn.functional.cross_entropy(logits, y, reduction="none")
    fooled = logits.argmax(dim=1) != y

    for i in range(1, queries):
        act = (~fooled).nonzero().squeeze(1)
        if act.numel() == 0:
            break
        st = streams.subset(act)
        na = act.numel()
        n_i = max(int(p_selection(i, queries, p_init) * k), 1)
        remove = st.random_subset(tag(_TAG_REMOVE, i), perturbed[act], n_i)
        add = st.random_subset(tag(_TAG_ADD, i), ~perturbed[act], n_i)
        cand = best[act].clone()
        clean = x_flat[act]
        rem_idx = remove[:, None, :].expand(na, c, n_i)
        cand.scatter_(2, rem_idx, clean.gather(2, rem_idx))
        add_idx = add[:, None, :].expand(na, c, n_i)
        if n_i > 1:
            colours = random_corners(st, tag(_TAG_COLOUR, i), n_i, c)
        else:
            colours = _differing_corner(st, i, cand.gather(2, add_idx).squeeze(2))[:, :, None]
        cand.scatter_(2, add_idx, colours)
        logits = model(cand.view(na, c, h, w))
        loss = nn.functional.cross_entropy(logits, y[act], reduction="none")
        miss = logits.argmax(dim=1) != y[act]
        accept = (loss > best_loss[act]) | miss
        acc = act[accept]
        best[acc] = cand[accept]
        best_loss[acc] = loss[accept]
        flip = perturbed[acc]
        flip.scatter_(1, remove[accept], False)
        flip.scatter_(1, add[accept], True)
        perturbed[acc] = flip
        fooled[act[miss]] = True
    return best.view(n, c, h, w), fooled
