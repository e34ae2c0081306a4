"""Online passes of a policy over a batch of instances that share T and m.

The instances are stacked time-major ((T, n, m) consumptions) so that step t reads one
contiguous (n, m) block; rows are independent, exactly as if each instance ran alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from methods.online_lp.instances import Instance
from methods.online_lp.policies import Policy


@dataclass(frozen=True)
class Batch:
    """Instances stacked for a joint pass: c (T, n), a (T, n, m), d (n, m)."""

    c: np.ndarray
    a: np.ndarray
    d: np.ndarray

    @classmethod
    def stack(cls, instances: Sequence[Instance]) -> Batch:
        if len({(inst.T, inst.m) for inst in instances}) != 1:
            raise ValueError("instances in one batch must share T and m")
        c = np.stack([inst.c for inst in instances], axis=1)
        a = np.stack([inst.a for inst in instances], axis=1)
        d = np.stack([inst.d for inst in instances])
        return cls(c=c, a=a, d=d)

    @property
    def T(self) -> int:
        return int(self.c.shape[0])


@dataclass
class PassResult:
    """Per row: reward, consumption, leftover budget b_{T+1}, final price y^D_T; decisions x (T, n)."""

    reward: np.ndarray
    consumption: np.ndarray
    leftover: np.ndarray
    y_final: np.ndarray
    decisions: np.ndarray
    trace_t: list[int] = field(default_factory=list)
    trace_y: list[list[list[float]]] = field(default_factory=list)


def run_pass(policy: Policy, batch: Batch, trace_every: int = 0) -> PassResult:
    """Arrivals in order, time 1-based; accept iff c_t > a_tᵀy_t and a_t ≤ b_t componentwise."""
    b = batch.T * batch.d.copy()
    decisions = np.zeros(batch.c.shape)
    price = policy.price
    trace_t: list[int] = []
    trace_y: list[list[list[float]]] = []
    for i in range(batch.T):
        t = i + 1
        if trace_every and i % trace_every == 0:
            trace_t.append(t)
            trace_y.append(price.tolist())
        a = batch.a[i]
        c = batch.c[i]
        x = ((c > (a * price).sum(axis=1)) & (a <= b).all(axis=1)).astype(np.float64)
        decisions[i] = x
        b -= a * x[:, None]
        policy.observe(t, c, a, x)
    return PassResult(
        reward=(batch.c * decisions).sum(axis=0),
        consumption=np.einsum("tnm,tn->nm", batch.a, decisions),
        leftover=b,
        y_final=price.copy(),
        decisions=decisions,
        trace_t=trace_t,
        trace_y=trace_y,
    )
