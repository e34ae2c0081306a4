"""Model-based clustering (MBC): cluster tasks by the similarity of their LoRA parameters."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD


@dataclass(frozen=True)
class MBCResult:
    labels: np.ndarray  # (T,)
    similarity: np.ndarray  # (T, T) cosine similarity of the reduced vectors
    n_components_used: int
    kept_fraction: float


def sparsify_rows(vectors: np.ndarray, sparsity: float = 0.8) -> np.ndarray:
    """Zero the entries with |v| at or below each row's ``sparsity``-quantile of |v|."""
    v = np.asarray(vectors, dtype=np.float64)
    thresh = np.quantile(np.abs(v), sparsity, axis=1, keepdims=True)
    return np.where(np.abs(v) > thresh, v, 0.0)


def mbc_cluster(
    vectors: np.ndarray,
    k: int,
    *,
    sparsity: float = 0.8,
    n_components: int = 64,
    n_init: int = 10,
    kmeans_seed: int = 42,
) -> MBCResult:
    """mttl's MBCWithCosSimTransform: sparsify, TruncatedSVD, cosine similarity, KMeans on S's rows.

    Components are capped at T - 1 (TruncatedSVD needs fewer components than rows).
    """
    v = np.asarray(vectors, dtype=np.float64)
    t = v.shape[0]
    if v.ndim != 2 or t < 2:
        raise ValueError("vectors: need a (tasks x parameters) array with at least 2 tasks")
    if not 1 <= k <= t:
        raise ValueError(f"k: must be in 1..{t}")
    sparse = sparsify_rows(v, sparsity)
    n_comp = max(1, min(n_components, t - 1, v.shape[1] - 1))
    emb = TruncatedSVD(n_components=n_comp, algorithm="randomized", n_iter=5,
                       random_state=kmeans_seed).fit_transform(sparse)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    sim = emb @ emb.T
    labels = KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=kmeans_seed).fit_predict(sim)
    kept = float((sparse != 0).mean())
    return MBCResult(labels, sim, n_comp, kept)
