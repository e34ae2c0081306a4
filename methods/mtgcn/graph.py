"""Graphs for MTGCN: the bundled CSBM generator, npz loading, the normalised adjacency.

CSBM (contextual stochastic block model), as in the spec: C equal classes; class means
mu_c ~ N(0, I_d) rescaled to norm ``mu_norm``; features x_v = mu_{y_v} + N(0, noise_var I);
undirected edges with expected degree ``avg_degree``, a fraction ``homophily`` of them
same-class: p_in = h*deg/(n/C - 1), p_out = (1-h)*deg/(n(C-1)/C). Split: ``train_per_class``
labels per class, ``n_val`` validation nodes, the rest test.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from methods._data import load_npz


@dataclass
class Graph:
    """A node-classification graph. ``y`` is -1 where the label is unknown to the caller."""

    edges: np.ndarray  # (2, E) undirected, each edge once (i < j) or both directions
    X: np.ndarray  # (n, d) float32
    y: np.ndarray  # (n,) int64, -1 = unknown
    train: np.ndarray  # (n,) bool
    val: np.ndarray
    test: np.ndarray

    @property
    def n(self) -> int:
        return len(self.X)

    @property
    def num_classes(self) -> int:
        known = self.y[self.y >= 0]
        return int(known.max()) + 1

    def save(self, path: str | Path) -> None:
        np.savez_compressed(
            path, edges=self.edges, X=self.X, y=self.y, train=self.train, val=self.val, test=self.test
        )


def csbm(
    n: int = 1000,
    classes: int = 4,
    d: int = 32,
    avg_degree: float = 10.0,
    homophily: float = 0.3,
    mu_norm: float = 1.0,
    noise_var: float | None = None,
    seed: int = 0,
    train_per_class: int = 20,
    n_val: int = 300,
) -> Graph:
    """Draw one CSBM graph; ``noise_var`` defaults to 4/d."""
    if n % classes:
        raise ValueError(f"csbm.n: {n} must be a multiple of classes={classes}")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError("csbm.homophily: must lie in [0, 1]")
    rng = np.random.default_rng(seed)
    noise_var = 4.0 / d if noise_var is None else noise_var
    y = np.repeat(np.arange(classes), n // classes)
    rng.shuffle(y)
    mu = rng.standard_normal((classes, d))
    mu *= mu_norm / np.linalg.norm(mu, axis=1, keepdims=True)
    X = (mu[y] + rng.standard_normal((n, d)) * np.sqrt(noise_var)).astype(np.float32)
    size = n // classes
    p_in = homophily * avg_degree / (size - 1)
    p_out = (1.0 - homophily) * avg_degree / (n - size)
    if p_in > 1 or p_out > 1:
        raise ValueError("csbm.avg_degree: too large for this n (an edge probability exceeds 1)")
    iu, ju = np.triu_indices(n, k=1)
    p = np.where(y[iu] == y[ju], p_in, p_out)
    keep = rng.random(p.shape) < p
    edges = np.stack([iu[keep], ju[keep]]).astype(np.int64)

    train = np.zeros(n, dtype=bool)
    for c in range(classes):
        train[rng.choice(np.flatnonzero(y == c), train_per_class, replace=False)] = True
    rest = rng.permutation(np.flatnonzero(~train))
    val = np.zeros(n, dtype=bool)
    val[rest[:n_val]] = True
    test = ~train & ~val
    return Graph(edges=edges, X=X, y=y.astype(np.int64), train=train, val=val, test=test)


def load_graph(path: str | Path) -> Graph:
    """An npz with ``edges`` (2,E), ``X`` (n,d), ``y`` (n,) (-1 unknown) and bool masks."""
    f = load_npz(path, "graph_npz", required=("edges", "X", "y", "train", "val", "test"))
    g = Graph(
        edges=np.asarray(f["edges"], dtype=np.int64),
        X=np.asarray(f["X"], dtype=np.float32),
        y=np.asarray(f["y"], dtype=np.int64),
        train=np.asarray(f["train"], dtype=bool),
        val=np.asarray(f["val"], dtype=bool),
        test=np.asarray(f["test"], dtype=bool),
    )
    n = len(g.X)
    if g.edges.ndim != 2 or g.edges.shape[0] != 2 or (g.edges.size and (g.edges.min() < 0 or g.edges.max() >= n)):
        raise ValueError("graph_npz: edges must be (2, E) node ids in [0, n)")
    if any(len(a) != n for a in (g.y, g.train, g.val, g.test)):
        raise ValueError("graph_npz: y and the masks must have one entry per node")
    if (g.y[g.train] < 0).any():
        raise ValueError("graph_npz: every training node needs a label")
    return g


def normalized_adjacency(edges: np.ndarray, n: int) -> torch.Tensor:
    """Â = D̃^{-1/2}(A + I)D̃^{-1/2} (symmetrised, duplicates merged), a sparse CSR tensor.

    CSR because its product with a dense matrix is the fastest sparse kernel on CPU; Â is
    symmetric, which :func:`methods.mtgcn.models.spmm` uses for its backward pass.
    """
    i = np.concatenate([edges[0], edges[1], np.arange(n)])
    j = np.concatenate([edges[1], edges[0], np.arange(n)])
    keys = np.unique(i * n + j)  # drop duplicate edges and given self-loops
    i, j = keys // n, keys % n
    deg = np.bincount(i, minlength=n).astype(np.float64)
    vals = 1.0 / np.sqrt(deg[i] * deg[j])
    coo = torch.sparse_coo_tensor(
        torch.from_numpy(np.stack([i, j])), torch.from_numpy(vals).float(), (n, n), check_invariants=True
    ).coalesce()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return coo.to_sparse_csr()


def edge_homophily(edges: np.ndarray, y: np.ndarray) -> float | None:
    """Fraction of edges (between labelled nodes, self-loops excluded) joining the same class."""
    a, b = edges
    ok = (a != b) & (y[a] >= 0) & (y[b] >= 0)
    if not ok.any():
        return None
    return float((y[a[ok]] == y[b[ok]]).mean())
