"""The flip estimator: how many top-1 labels entropy minimisation changes, weighted by the
rank of the initial confidence, mapped to the un-adapted model's accuracy."""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from scipy.stats import rankdata
from torch import nn

from methods.entropy_enigma.adapt import (
    configure_for_em,
    entropy_minimize,
    group_for_em,
    predict,
)

Reference = Literal["batch_stats", "running_stats"]

_EM_SETTINGS = frozenset(inspect.signature(entropy_minimize).parameters) - {"model", "xs",
                                                                         "optimizer_out", "loss_out"}
"""The settings :func:`estimate_flips_many` passes on to EM (read off its signature)."""

# The authors' fits for ResNet-50 at n = 1000 images (accuracy in percent). They do not
# transfer to other models; kept for fit="authors" and guarded against transcription errors.
AUTHORS_W_QUAD = (3.55553868e-4, -0.321445023, 75.661858)
AUTHORS_U_LIN = (-0.10318227, 83.55158891)
AUTHORS_U_QUAD = (-1.01165493e-5, -0.0959406999, 82.5756446)


@dataclass(frozen=True)
class FlipStats:
    flips: float  # fraction of images whose label flipped
    weighted_flips: float  # mean of flip_i * w_i
    weighted_flips_1000: float  # the same as a sum over 1000 images (the authors' W)
    avg_conf: float  # mean max-softmax at iteration 0
    n_images: int


def rank_weights(conf: np.ndarray) -> np.ndarray:
    """rank(conf)/n with ascending ranks and averaged ties: the most confident image gets 1."""
    return rankdata(np.asarray(conf), method="average") / len(conf)


def estimate_flips(model: nn.Module, x: np.ndarray | torch.Tensor, **em_args) -> FlipStats:
    """Flips between iteration 0 and the end of EM on one unlabelled set ``x`` (n, ...).

    Arguments as :func:`estimate_flips_many`.
    """
    return estimate_flips_many(model, [x], **em_args)[0]


def estimate_flips_many(
    model: nn.Module,
    sets: list[np.ndarray | torch.Tensor],
    *,
    reference: Reference = "batch_stats",
    eval_batch: int = 0,
    **em_args: Any,
) -> list[FlipStats]:
    """:func:`estimate_flips` for several sets; sets of equal size adapt together (one
    grouped model, each set with its own BN copy and batch stream), the same numbers as one by
    one up to float round-off.

    ``reference="batch_stats"`` (authors) reads the iteration-0 labels from the configured
    batch-statistics model; ``"running_stats"`` reads them from the source model as deployed,
    which also counts the flips caused by switching BN statistics. ``em_args`` are
    :func:`entropy_minimize`'s settings (steps, lr, batch_size, momentum, eata_filter, e0_frac,
    d_margin, reset_every, seed), with its defaults: one signature holds them, so the flip
    estimate can never adapt with settings other than the ones EM documents.
    """
    unknown = set(em_args) - _EM_SETTINGS
    if unknown:
        raise TypeError(f"estimate_flips_many: unknown EM settings {sorted(unknown)}")
    if reference not in ("batch_stats", "running_stats"):
        raise ValueError(f"reference: unknown reference {reference!r}")
    tensors = [torch.as_tensor(np.asarray(x, dtype=np.float32)) for x in sets]
    configured = configure_for_em(model)
    out: list[FlipStats | None] = [None] * len(tensors)
    by_size: dict[tuple, list[int]] = {}
    for i, t in enumerate(tensors):
        by_size.setdefault(tuple(t.shape), []).append(i)
    for members in by_size.values():
        xs = torch.stack([tensors[i] for i in members])
        grouped = group_for_em(configured, len(members))
        if reference == "batch_stats":
            labels0, conf0 = predict(grouped, xs, eval_batch)
        else:
            labels0, conf0 = predict(model.eval(), xs, eval_batch)  # running stats: rows independent
        entropy_minimize(grouped, xs, **em_args)
        labels1, _ = predict(grouped, xs, eval_batch)
        for j, i in enumerate(members):
            flip = (labels1[j] != labels0[j]).numpy().astype(float)
            w = rank_weights(conf0[j].numpy())
            wf = float((flip * w).mean())
            out[i] = FlipStats(float(flip.mean()), wf, wf * 1000.0, float(conf0[j].mean()), len(flip))
    return out  # type: ignore[return-value]


def fit_flips_to_acc(features: np.ndarray, accs: np.ndarray, degree: int = 2) -> np.ndarray:
    """Least-squares polynomial (highest power first) of accuracy on one feature."""
    return np.polyfit(np.asarray(features, float), np.asarray(accs, float), degree)


def loco_predictions(features: np.ndarray, accs: np.ndarray, groups: list[str], degree: int) -> np.ndarray:
    """Leave-one-corruption-out: fit on the other kinds, predict the held-out kind's sets."""
    features, accs = np.asarray(features, float), np.asarray(accs, float)
    groups_arr = np.asarray(groups)
    pred = np.empty_like(accs)
    for g in dict.fromkeys(groups):
        test = groups_arr == g
        coef = fit_flips_to_acc(features[~test], accs[~test], degree)
        pred[test] = np.polyval(coef, features[test])
    return pred


def authors_accuracy(weighted_flips_1000: float, n_images: int) -> float:
    """The authors' W polynomial, as a fraction. Their fit assumes n = 1000 images; W is
    already rescaled to 1000 images, so other n only warn."""
    if n_images != 1000:
        warnings.warn(f"fit='authors' was fitted at n=1000 images; this set has {n_images} "
                      "(W rescaled to 1000)", stacklevel=2)
    return float(np.polyval(AUTHORS_W_QUAD, weighted_flips_1000)) / 100.0
