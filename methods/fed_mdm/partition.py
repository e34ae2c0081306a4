"""Partitioning central data into simulated clients with an MDM (the authors' popping loop),
and the energy distance used to judge how realistic the simulated clients are."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial.distance import cdist

from methods.fed_mdm.synthetic import dirichlet_rows

SizeSampler = Callable[[int, np.random.Generator], int]


def resample_sizes(sizes: np.ndarray | list[int]) -> SizeSampler:
    """Client sizes drawn from a list (e.g. the observed clients'), ignoring the component."""
    pool = np.asarray(sizes, dtype=np.int64)
    if len(pool) == 0 or (pool < 1).any():
        raise ValueError("sizes: must be a non-empty list of positive ints")
    return lambda k, rng: int(pool[rng.integers(len(pool))])


def sizes_from_hist(size_hist: np.ndarray, edges: np.ndarray | list[float]) -> SizeSampler:
    """Component k's sizes: a bin from P(bin | k), then uniform integers inside the bin."""
    hist, edges = np.asarray(size_hist, float), np.asarray(edges, float)
    if hist.shape[1] != len(edges) - 1:
        raise ValueError("size_hist: needs one column per bin (len(size_bins) - 1)")

    def draw(k: int, rng: np.random.Generator) -> int:
        b = rng.choice(hist.shape[1], p=hist[k] / hist[k].sum())
        lo, hi = int(np.ceil(edges[b])), int(np.ceil(edges[b + 1]))
        return max(1, int(rng.integers(lo, max(hi, lo + 1))))

    return draw


def partition_by_mdm(
    labels: np.ndarray,
    phi: np.ndarray,
    alphas: np.ndarray,
    size_sampler: SizeSampler,
    seed: int = 0,
    *,
    spread_after_fails: int = 20,
    spread_pct: float = 0.02,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Disjoint client index lists and the unused indices.

    Each client: k ~ phi, q ~ Dir(alpha_k), a size n; stop when n exceeds what is left; else
    sample classes from q and pop from that class's (shuffled) pool. Every
    ``spread_after_fails * n`` draws, q gets ``spread_pct`` added to every class and is
    renormalised, so exhausted classes cannot stall the loop.
    """
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    classes = alphas.shape[1]
    pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in range(classes)]
    left = sum(len(p) for p in pools)
    phi = np.asarray(phi, float) / np.sum(phi)
    clients: list[np.ndarray] = []
    while True:
        k = int(rng.choice(len(phi), p=phi))
        q = dirichlet_rows(np.asarray(alphas, float)[k][None], rng)[0]
        n = size_sampler(k, rng)
        if n > left:
            break
        client: list[int] = []
        draws = 0
        while len(client) < n:
            for c in rng.choice(classes, size=n - len(client), p=q):
                draws += 1
                if pools[c]:
                    client.append(pools[c].pop())
                    if len(client) == n:
                        break
                if draws % (spread_after_fails * n) == 0:
                    q = (q + spread_pct) / (q + spread_pct).sum()
                    break  # re-draw the rest of the batch from the spread q
        left -= n
        clients.append(np.asarray(client, dtype=np.int64))
    unused = np.sort(np.concatenate([np.asarray(p, dtype=np.int64) for p in pools]))
    return clients, unused


def label_proportions(clients: list[np.ndarray], labels: np.ndarray, classes: int) -> np.ndarray:
    """Each client's label distribution, (clients, C)."""
    labels = np.asarray(labels)
    out = np.zeros((len(clients), classes))
    for i, idx in enumerate(clients):
        out[i] = np.bincount(labels[idx], minlength=classes) / max(len(idx), 1)
    return out


def counts_to_proportions(counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, float)
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)


def energy_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Squared energy distance, V-statistic, Euclidean: always >= 0 (unlike the U-statistic),
    and 0 for identical samples."""
    xy = cdist(x, y).mean()
    xx = cdist(x, x).mean()
    yy = cdist(y, y).mean()
    return float(max(2 * xy - xx - yy, 0.0))
