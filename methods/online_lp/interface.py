"""The ``online-lp`` task's policy interface, run against a batch of instances.

A policy is two functions over a float64 state array with one row per instance:
``init(m, d, T) -> state`` with d of shape (n, m) and state of shape (n, k), k ≤ 8m + 8; and
``decide(state, c, a, b, t) -> (accept, state)`` with c (n,), a (n, m), b (n, m) the remaining
budgets, t the 1-based time and accept a bool (n,). The runner owns the arrivals, the budget and
the bookkeeping: it hands out copies (so nothing can reach future arrivals through ``.base``),
turns an infeasible accept into a reject, and validates every returned state. Rows are
independent instances; :func:`run_policy` on one row must give that row's decisions unchanged
(the task's eval checks this on a private row).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from methods.online_lp.simulate import Batch

InitFn = Callable[[int, np.ndarray, int], np.ndarray]
DecideFn = Callable[..., tuple[np.ndarray, np.ndarray]]


class PolicyError(ValueError):
    """The policy broke the interface (wrong shapes, dtypes or state size)."""


@dataclass
class InterfaceResult:
    reward: np.ndarray
    leftover: np.ndarray
    decisions: np.ndarray
    policy_seconds: float


def max_state_size(m: int) -> int:
    """The O(m) cap on a row of state: no room for a history to re-solve LPs over."""
    return 8 * m + 8


def _check_state(state: object, n: int, k: int | None, m: int) -> np.ndarray:
    if not isinstance(state, np.ndarray) or state.dtype != np.float64 or state.ndim != 2:
        raise PolicyError("state must be a 2-d float64 numpy array (one row per instance)")
    if state.shape[0] != n or state.shape[1] > max_state_size(m):
        raise PolicyError(f"state must have shape ({n}, k) with k <= {max_state_size(m)}")
    if k is not None and state.shape[1] != k:
        raise PolicyError("the state's width changed between steps")
    return state


def run_policy(
    init: InitFn, decide: DecideFn, batch: Batch, time_limit: float | None = None
) -> InterfaceResult:
    """One pass of a task policy over ``batch``; raises :class:`PolicyError` on misuse."""
    n, m = batch.d.shape
    T = batch.T
    spent = 0.0
    start = time.perf_counter()
    state = _check_state(init(m, batch.d.copy(), T), n, None, m)
    spent += time.perf_counter() - start
    k = state.shape[1]
    b = T * batch.d.copy()
    decisions = np.zeros((T, n))
    for i in range(T):
        a = batch.a[i]
        c = batch.c[i]
        start = time.perf_counter()
        out = decide(state, c.copy(), a.copy(), b.copy(), i + 1)
        spent += time.perf_counter() - start
        try:
            accept, state = out
        except (TypeError, ValueError) as err:
            raise PolicyError("decide must return (accept, state)") from err
        accept = np.asarray(accept)
        if accept.shape != (n,):
            raise PolicyError(f"accept must have shape ({n},), got {accept.shape}")
        state = _check_state(state, n, k, m)
        x = (accept.astype(bool) & (a <= b).all(axis=1)).astype(np.float64)
        decisions[i] = x
        b -= a * x[:, None]
        if time_limit is not None and i % 1000 == 0 and spent > time_limit:
            raise PolicyError(f"the policy took more than {time_limit:.0f} s")
    if time_limit is not None and spent > time_limit:
        raise PolicyError(f"the policy took more than {time_limit:.0f} s")
    return InterfaceResult(
        reward=(batch.c * decisions).sum(axis=0),
        leftover=b,
        decisions=decisions,
        policy_seconds=spent,
    )
