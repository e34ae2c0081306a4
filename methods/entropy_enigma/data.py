"""Digits and the 30 CPU-scale distribution shifts (6 kinds x 5 severities) of the spec."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from methods._data import digits_permuted_split

KINDS = ("noise", "blur", "rot", "drop", "contrast", "shift")
SEVERITIES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class DigitsSplit:
    x_train: np.ndarray  # (1000, 64) in [0, 1]
    y_train: np.ndarray
    x_test: np.ndarray  # (797, 64)
    y_test: np.ndarray


def load_digits_split(n_train: int = 1000, seed: int = 0) -> DigitsSplit:
    """sklearn's bundled digits scaled to [0, 1], split by a seeded permutation."""
    return DigitsSplit(*digits_permuted_split(n_train, seed))


def _translate(img: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """Integer shift with zero fill (nearest neighbour, no wrap-around)."""
    out = np.zeros_like(img)
    h, w = img.shape
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[yd, xd] = img[ys, xs]
    return out


def apply_shift(x: np.ndarray, kind: str, severity: int) -> np.ndarray:
    """One corrupted copy of flat 8x8 images ``x``; the RNG is default_rng(severity) per kind."""
    if kind not in KINDS:
        raise ValueError(f"kind: unknown shift {kind!r} (choose from {', '.join(KINDS)})")
    if severity not in SEVERITIES:
        raise ValueError(f"severity: must be 1..5, got {severity}")
    s = severity
    rng = np.random.default_rng(s)
    imgs = x.reshape(-1, 8, 8).astype(np.float64)
    if kind == "noise":
        out = imgs + rng.normal(0.0, 0.15 * s, size=imgs.shape)
    elif kind == "blur":
        out = np.stack([ndimage.gaussian_filter(im, sigma=0.3 * s) for im in imgs])
    elif kind == "rot":
        angles = rng.uniform(-10 * s, 10 * s, size=len(imgs))
        out = np.stack([ndimage.rotate(im, a, reshape=False, order=1, mode="constant", cval=0.0)
                        for im, a in zip(imgs, angles)])
    elif kind == "drop":
        out = imgs * (rng.random(imgs.shape) >= 0.1 * s)
    elif kind == "contrast":
        out = imgs * (1 - 0.17 * s) + 0.085 * s
    else:  # shift
        dx = rng.integers(int(np.floor(-s / 2)), int(np.floor(s / 2)) + 1, size=len(imgs))
        dy = rng.integers(-1, 2, size=len(imgs)) if s > 2 else np.zeros(len(imgs), dtype=int)
        out = np.stack([_translate(im, int(a), int(b)) for im, a, b in zip(imgs, dy, dx)])
    return out.reshape(len(x), 64).astype(np.float32)


def all_shifts() -> list[tuple[str, int]]:
    return [(k, s) for k in KINDS for s in SEVERITIES]
