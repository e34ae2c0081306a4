"""Arrival streams for online resource allocation, one numpy ``default_rng`` per instance.

The generator seeds and draw orders are part of the spec (they make every report reproducible
and let every method see the same arrivals), so they are fixed here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Family = Literal["uniform", "scaled", "correlated"]
FAMILIES: tuple[str, ...] = ("uniform", "scaled", "correlated")

SCALE_LOW, SCALE_HIGH = 0.8, 1.25
"""Range of the per-instance resource scales u and the reward scale s in ``scaled``."""


@dataclass(frozen=True)
class Instance:
    """One realised arrival sequence: rewards ``c`` (T,), consumptions ``a`` (T, m), budget rate ``d``.

    The total budget is ``T * d``. ``scale_s`` is the reward scale (1 outside ``scaled``): regret
    divided by it is comparable across instances of the ``scaled`` family.
    """

    c: np.ndarray
    a: np.ndarray
    d: np.ndarray
    seed: int
    family: str
    scale_s: float = 1.0

    @property
    def T(self) -> int:
        return int(self.c.shape[0])

    @property
    def m(self) -> int:
        return int(self.a.shape[1])


def base_budget(d: float | Sequence[float], m: int) -> np.ndarray:
    """The budget rate as an (m,) float64 vector; a scalar is repeated m times."""
    if np.isscalar(d):
        return np.full(m, float(d))
    vec = np.asarray(d, dtype=np.float64)
    if vec.shape != (m,):
        raise ValueError(f"d: expected a float or a list of {m} floats, got shape {vec.shape}")
    return vec


def make_instance(
    family: str, T: int, m: int, seed: int, d: float | Sequence[float] = 0.25
) -> Instance:
    """Draw one instance of ``family`` (see the spec for the seeds and draw orders)."""
    base = base_budget(d, m)
    if family == "uniform":
        rng = np.random.default_rng([T, seed])
        a = rng.random((T, m))
        c = rng.random(T)
        return Instance(c=c, a=a, d=base, seed=seed, family=family)
    if family == "correlated":
        # Same stream as ``uniform``; the reward mixes the consumption in, which shrinks the set
        # of customers whose accept decision depends on the price.
        rng = np.random.default_rng([T, seed])
        a = rng.random((T, m))
        c = 0.5 * a.mean(axis=1) + 0.5 * rng.random(T)
        return Instance(c=c, a=a, d=base, seed=seed, family=family)
    if family == "scaled":
        rng = np.random.default_rng([T, seed, 5])
        u = rng.uniform(SCALE_LOW, SCALE_HIGH, size=m)
        s = float(rng.uniform(SCALE_LOW, SCALE_HIGH))
        a = u * rng.random((T, m))
        c = s * rng.random(T)
        return Instance(c=c, a=a, d=base * u, seed=seed, family=family, scale_s=s)
    raise ValueError(f"family: unknown family {family!r}; choose one of {list(FAMILIES)}")
