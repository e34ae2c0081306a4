"""Federated EM for a mixture of Dirichlet-multinomials (the paper's fitting procedure).

The E-step and the per-client sufficient statistics are what each client computes locally;
``aggregate`` is the server's sum, and ``server_update`` turns summed statistics into new
parameters. Written this way, the central fit here *is* the federated one (sums commute), and
the DP variant only adds noise between the two halves.

**Where this departs from the authors' code** (mdmauthors/pfl-research, ``mdm-paper/mdm/
algorithm.py``, ``process_aggregated_statistics``):

- *Zeros.* Their server clamps the summed statistics at 0 and, wherever a sum is exactly 0,
  reallocates mass within its row (``prevent_zero``: every entry at or below a threshold gets
  1% of the row's total shared among them, then the row is rescaled to its old total; the
  threshold is 1 for the Minka numerators, 0 for the denominators and the posterior sums, 0.001
  for the size histogram, whose share doubles until no zero is left). No alpha can then reach 0.
  Here the default (``zero_rule="floor"``) updates alpha from the raw sums and floors it at
  ``alpha_floor`` (1e-6). The two differ only when a sum is exactly 0, e.g. a class no client of
  a component holds. The floor sets that alpha to 1e-6 at once; reallocation gives its numerator
  1% of the row, taken from the other classes (so their alphas also come out about 1% lower that
  step), and the alpha then shrinks about 100-fold a step: on 200 clients with 5 of 10 classes
  absent it is 1.8e-3, 1.8e-5, then at the floor from step 3 (left unfloored it heads for 0,
  which their server's assertion would reject). ``zero_rule="reallocate"`` applies the authors'
  rule (the floor stays as a guard); the DP path then clamps noisy sums at 0 and leaves the zeros to it, where the default fills them at
  once (``_fill_zeros``: 1% of the row each, no rescaling). The denominators are reallocated as
  one row over components (the shape of their tensor was not read).
- *Size bins.* Their edges are each bin's upper edge: a client falls in the first bin whose edge
  its size does not exceed, so bins are closed on the right, (e_{b-1}, e_b]. Here ``size_bins``
  are B + 1 edges of bins closed on the left, [e_b, e_{b+1}) (sizes outside go to the end bins;
  ``sizes_from_hist`` draws sizes to match). For the same bins, a client whose size equals an
  inner edge lands one bin higher here than in theirs; no other client moves. Not a switch: the
  default stays as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.special import digamma

from methods.fed_mdm.dm import log_dm, logsumexp

Init = Literal["argmax", "median"]
ZeroRule = Literal["floor", "reallocate"]
ZERO_MASS_SHARE = 0.01


@dataclass
class MDMParams:
    """phi (K,), alphas (K, C) and optionally P(size bin | k) (K, B) with its bin edges."""

    phi: np.ndarray
    alphas: np.ndarray
    size_hist: np.ndarray | None = None
    size_bins: np.ndarray | None = None

    @property
    def k(self) -> int:
        return len(self.phi)


@dataclass
class ClientStats:
    """Summed sufficient statistics: what the server receives (one client's or many's)."""

    weight: np.ndarray  # (K,) sum_u w_uk
    numer: np.ndarray  # (K, C) sum_u w_uk [psi(n_uc + a_kc) - psi(a_kc)]
    denom: np.ndarray  # (K,) sum_u w_uk [psi(n_u + A_k) - psi(A_k)]
    size: np.ndarray | None  # (K, B) sum_u w_uk 1[bin(n_u) = b]
    loglik: float  # sum_u ln sum_k phi_k DM(n_u | a_k), no coefficient or size term
    n_clients: int
    objective: float = 0.0  # the same with the size term: what EM actually increases


@dataclass
class FitResult:
    params: MDMParams
    ll_curve: list[float] = field(default_factory=list)  # per-client mean, every iteration
    objective_curve: list[float] = field(default_factory=list)  # with the size term

    @property
    def monotone(self) -> bool:
        """No decrease beyond 1e-9 nats per client in what EM maximises."""
        return bool(np.all(np.diff(self.objective_curve) >= -1e-9))


def size_bin_index(sizes: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each client size; sizes outside the edges go to the first or last bin."""
    return np.clip(np.searchsorted(edges, sizes, side="right") - 1, 0, len(edges) - 2)


def client_statistics(counts: np.ndarray, params: MDMParams) -> ClientStats:
    """E-step plus local statistics for a set of clients, already summed over them."""
    counts = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore"):
        log_phi = np.log(params.phi)
    ldm = log_dm(counts, params.alphas)  # (U, K)
    log_v = log_phi[None] + ldm
    bins = None
    if params.size_hist is not None:
        bins = size_bin_index(counts.sum(axis=1), params.size_bins)
        with np.errstate(divide="ignore"):
            log_v = log_v + np.log(params.size_hist[:, bins].T)
    w = np.exp(log_v - logsumexp(log_v, axis=1, keepdims=True))  # (U, K)
    a = params.alphas
    n = counts.sum(axis=1)
    numer = np.einsum("uk,ukc->kc", w, digamma(counts[:, None, :] + a[None]) - digamma(a)[None])
    a_sum = a.sum(axis=1)
    denom = (w * (digamma(n[:, None] + a_sum[None]) - digamma(a_sum)[None])).sum(axis=0)
    size = None
    if bins is not None:
        size = np.zeros_like(params.size_hist)
        np.add.at(size.T, bins, w)
    loglik = float(logsumexp(log_phi[None] + ldm, axis=1).sum())
    objective = float(logsumexp(log_v, axis=1).sum())
    return ClientStats(w.sum(axis=0), numer, denom, size, loglik, len(counts), objective)


def aggregate(parts: list[ClientStats]) -> ClientStats:
    """The server's sum over clients (or over groups of clients)."""
    return ClientStats(
        weight=sum(p.weight for p in parts),
        numer=sum(p.numer for p in parts),
        denom=sum(p.denom for p in parts),
        size=None if parts[0].size is None else sum(p.size for p in parts),
        loglik=sum(p.loglik for p in parts),
        n_clients=sum(p.n_clients for p in parts),
        objective=sum(p.objective for p in parts),
    )


def _fill_zeros(rows: np.ndarray) -> np.ndarray:
    """Clamp at 0, then give zero entries 1% of their row's mass (the authors' server rule)."""
    rows = np.maximum(np.atleast_2d(rows), 0.0)
    mass = rows.sum(axis=1, keepdims=True)
    mass = np.where(mass > 0, mass, 1.0)
    return np.where(rows > 0, rows, ZERO_MASS_SHARE * mass)


def reallocate_zeros(rows: np.ndarray, min_val: float = 0.0, share: float = ZERO_MASS_SHARE) -> np.ndarray:
    """The authors' ``prevent_zero``: in each row holding an entry <= ``min_val``, those entries
    get ``share`` of the row's total, split evenly, and the row is rescaled to its old total.

    Rows without such an entry are returned as they are; a row whose total is 0 stays 0 (the
    caller's fallback handles it). Called only when some entry is exactly 0, as theirs is.
    """
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    low = rows <= min_val
    total = rows.sum(axis=1, keepdims=True)
    n_low = low.sum(axis=1, keepdims=True)
    extra = total * share / np.maximum(n_low, 1)
    out = np.where(low, extra, rows)
    kept = out.sum(axis=1, keepdims=True)
    rescaled = np.where(kept > 0, out / np.where(kept > 0, kept, 1.0) * total, out)
    return np.where(n_low > 0, rescaled, rows)


def _reallocated(stats: ClientStats) -> ClientStats:
    """The authors' server, step one: clamp every sum at 0, then reallocate where one is 0."""
    weight = np.maximum(stats.weight, 0.0)
    numer = np.maximum(stats.numer, 0.0)
    denom = np.maximum(stats.denom, 0.0)
    size = None if stats.size is None else np.maximum(stats.size, 0.0)
    if (weight == 0).any():
        weight = reallocate_zeros(weight)[0]
    if (numer == 0).any():
        numer = reallocate_zeros(numer, min_val=1.0)
    if (denom == 0).any():
        denom = reallocate_zeros(denom)[0]
    if size is not None and (size == 0).any():
        size = _reallocate_doubling(size)
    return ClientStats(weight, numer, denom, size, stats.loglik, stats.n_clients, stats.objective)


def _reallocate_doubling(size: np.ndarray) -> np.ndarray:
    """The size histogram's rule: threshold 0.001, doubling the share until no zero is left
    (in rows that hold any mass)."""
    share = ZERO_MASS_SHARE
    out = reallocate_zeros(size, min_val=0.001, share=share)
    live = size.sum(axis=1) > 0
    while (out[live] == 0).any() and share < 0.5:
        share *= 2
        out = reallocate_zeros(size, min_val=0.001, share=share)
    return out


def add_dp_noise(
    stats: ClientStats, sigma: float, rng: np.random.Generator, *, fill_zeros: bool = True
) -> ClientStats:
    """Gaussian noise on every summed statistic. Experimental: the paper's calibration of
    sigma to (epsilon, delta) was not read, so no privacy guarantee is claimed.

    ``fill_zeros=False`` only clamps at 0 and leaves the zeros to ``server_update``'s
    ``zero_rule="reallocate"`` (the authors' order)."""
    def noisy(x):
        return None if x is None else x + rng.normal(0.0, sigma, size=np.shape(x))

    if not fill_zeros:
        def clamp(x):
            return None if x is None else np.maximum(x, 0.0)

        return ClientStats(clamp(noisy(stats.weight)), clamp(noisy(stats.numer)), clamp(noisy(stats.denom)),
                           clamp(noisy(stats.size)), stats.loglik, stats.n_clients, stats.objective)
    return ClientStats(
        weight=_fill_zeros(noisy(stats.weight))[0],
        numer=_fill_zeros(noisy(stats.numer)),
        denom=np.maximum(noisy(stats.denom), 1e-12),
        size=None if stats.size is None else _fill_zeros(noisy(stats.size)),
        loglik=stats.loglik,
        n_clients=stats.n_clients,
        objective=stats.objective,
    )


def server_update(
    stats: ClientStats, params: MDMParams, alpha_floor: float = 1e-6, zero_rule: ZeroRule = "floor"
) -> MDMParams:
    """M-step from summed statistics: phi, P(bin | k), and one Minka fixed-point step on alpha.

    A component that lost all its weight keeps its alpha (its denominator is 0).
    ``zero_rule="reallocate"`` first reallocates mass to zero sums as the authors' server does
    (see the module docstring); alpha is floored at ``alpha_floor`` either way.
    """
    if zero_rule == "reallocate":
        stats = _reallocated(stats)
    elif zero_rule != "floor":
        raise ValueError(f"zero_rule: unknown rule {zero_rule!r}")
    phi = stats.weight / stats.weight.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = stats.numer / stats.denom[:, None]
    alphas = np.where(np.isfinite(ratio), params.alphas * ratio, params.alphas)
    alphas = np.maximum(alphas, alpha_floor)
    size_hist = None
    if stats.size is not None:
        tot = stats.size.sum(axis=1, keepdims=True)
        size_hist = np.where(tot > 0, stats.size / np.where(tot > 0, tot, 1.0), params.size_hist)
        if zero_rule == "reallocate" and (size_hist == 0).any():
            size_hist = reallocate_zeros(size_hist, min_val=0.001)
    return MDMParams(phi, alphas, size_hist, params.size_bins)


def initial_params(
    counts: np.ndarray, k: int, *, init: Init = "argmax", seed: int = 0,
    size_bins: np.ndarray | None = None,
) -> MDMParams:
    """Random hard assignment, then per-component Dirichlet moment matching.

    "argmax" is the authors' precision s = (p_j - q_j) / (q_j - p_j^2) at j = argmax p (from
    E q_c^2 = p_c (1 - p_c) / (A + 1) + p_c^2); "median" is the prototype's median over classes
    of m(1 - m)/var - 1. Both divide by the true component counts (the authors divide by
    cohort/K). Precisions are floored at 0.1 so a degenerate component cannot start at 0.
    """
    counts = np.asarray(counts, dtype=float)
    rng = np.random.default_rng(seed)
    u, c = counts.shape
    assign = rng.integers(0, k, size=u)
    props = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    alphas = np.empty((k, c))
    for j in range(k):
        members = props[assign == j] if np.any(assign == j) else props
        p = members.mean(axis=0)
        q = (members**2).mean(axis=0)
        p = np.where(p > 0, p, ZERO_MASS_SHARE)
        p = p / p.sum()
        var = q - p**2
        if init == "argmax":
            i = int(np.argmax(p))
            s = (p[i] - q[i]) / var[i] if var[i] > 0 else np.inf
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(var > 0, p * (1 - p) / var - 1, np.inf)
            s = float(np.median(ratio))
        s = float(np.clip(s, 0.1, 1e4)) if np.isfinite(s) else 1e4
        alphas[j] = s * p
    size_hist = None
    if size_bins is not None:
        size_bins = np.asarray(size_bins, dtype=float)
        bins = size_bin_index(counts.sum(axis=1), size_bins)
        size_hist = np.full((k, len(size_bins) - 1), 1.0)  # +1 smoothing: no empty bin at start
        np.add.at(size_hist, (assign, bins), 1.0)
        size_hist /= size_hist.sum(axis=1, keepdims=True)
    return MDMParams(np.full(k, 1.0 / k), alphas, size_hist, size_bins)


def fit_mdm(
    counts: np.ndarray,
    k: int = 3,
    *,
    iters: int = 200,
    init: Init = "argmax",
    init_seed: int = 0,
    size_bins: np.ndarray | list[float] | None = None,
    alpha_floor: float = 1e-6,
    zero_rule: ZeroRule = "floor",
    dp_sigma: float = 0.0,
    dp_seed: int = 0,
    n_shards: int = 1,
) -> FitResult:
    """EM with one Minka step per iteration; ``ll_curve[i]`` is the ll under iteration i's
    parameters (before its update), so the curve is the one EM guarantees non-decreasing.

    ``n_shards`` > 1 computes the statistics per group of clients and sums them, which is how
    a federated server sees them (the result is the same up to round-off). ``zero_rule``:
    "floor" (default) or the authors' "reallocate" (module docstring).
    """
    counts = np.asarray(counts)
    if counts.ndim != 2 or len(counts) < 1:
        raise ValueError("counts: must be a (clients x classes) array")
    if (counts < 0).any():
        raise ValueError("counts: must be non-negative")
    if (counts.sum(axis=1) == 0).any():
        raise ValueError("counts: every client needs at least one example")
    edges = None if size_bins is None else np.asarray(size_bins, dtype=float)
    params = initial_params(counts, k, init=init, seed=init_seed, size_bins=edges)
    rng = np.random.default_rng(dp_seed)
    shards = np.array_split(np.arange(len(counts)), max(1, n_shards))
    result = FitResult(params)
    for _ in range(iters):
        stats = aggregate([client_statistics(counts[s], params) for s in shards if len(s)])
        result.ll_curve.append(stats.loglik / stats.n_clients)
        result.objective_curve.append(stats.objective / stats.n_clients)
        if dp_sigma > 0:
            stats = add_dp_noise(stats, dp_sigma, rng, fill_zeros=zero_rule == "floor")
        params = server_update(stats, params, alpha_floor, zero_rule)
    result.params = params
    return result
