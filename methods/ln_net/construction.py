"""verify.md's width-3 LN-Net that fits any binary labelling of m points with 2m - 4 LN layers.

Geometry: LN (ε = 0) maps R³ off the line ∝ 1 onto the circle {h : 1ᵀh = 0, ‖h‖² = 3}; write
h = √3·E·u with E an orthonormal basis of 1^⊥ and u on the unit circle. A layer with
W = E·Eᵀ/√3 and b = E·c then realises the circle map u ↦ (u + c)/‖u + c‖.

* Merge: c = -(u_i + t(u_j - u_i)) with t ∉ [0, 1] sends u_i and u_j to the same point, so two
  same-label clusters become one; a search over pairs and t keeps every other cluster apart.
* Spread: after each merge (while > 2 clusters remain), a map with ‖c‖ < 1 (a bijection of the
  circle) re-spreads the clusters to widen the smallest gap.
* Readout: with the last two clusters at p₀ and p₁, logit = (p₁ - p₀)·u (the bias
  -(p₁-p₀)·(p₀+p₁)/2 vanishes on the unit circle).

Layer count: 1 input layer + (m-2) merges + (m-3) spreads = 2m - 4. [R] the name "merge" and the
search are verify.md's; the paper's own construction was not seen. Gaps shrink with every layer,
so float64 breaks down around m ≈ 40-64 (the theorem itself is exact).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

E = np.stack([np.array([1.0, -1.0, 0.0]) / np.sqrt(2), np.array([1.0, 1.0, -2.0]) / np.sqrt(6)],
             axis=1)  # (3, 2), orthonormal basis of 1^⊥
MERGE_CANDIDATES = 5
SPREAD_RHO_MAX = 0.97
ACCEPT_SPREAD_FRACTION = 1e-3
SPREAD_PENALTY = 1000.0


class ConstructionError(ValueError):
    """The merge search accepted no try (the message names m)."""


@dataclass
class Construction:
    """Weights of the width-3 net: input layer, circle layers, readout (all float64)."""

    W0: np.ndarray  # (3, d)
    b0: np.ndarray  # (3,)
    Ws: list[np.ndarray] = field(default_factory=list)  # each (3, 3)
    bs: list[np.ndarray] = field(default_factory=list)  # each (3,)
    w_out: np.ndarray = field(default_factory=lambda: np.zeros(3))
    b_out: float = 0.0
    min_gap_per_layer: list[float] = field(default_factory=list)

    @property
    def n_layers(self) -> int:
        """LN layers: the input layer plus every circle layer."""
        return 1 + len(self.Ws)


def ln_exact(z: np.ndarray) -> np.ndarray:
    """LN with ε = 0 over the last axis (population standard deviation)."""
    centred = z - z.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(axis=-1, keepdims=True))


def forward_construction(net: Construction, X: np.ndarray) -> np.ndarray:
    """Logits of the actual LN-Net (linear → LN, repeatedly, then the readout) on X (m, d)."""
    h = ln_exact(X @ net.W0.T + net.b0)
    for W, b in zip(net.Ws, net.bs):
        h = ln_exact(h @ W.T + b)
    return h @ net.w_out + net.b_out


def _to_circle(h: np.ndarray) -> np.ndarray:
    return h @ E / np.sqrt(3.0)


def _angle_gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle between unit vectors along the last axis, in [0, π]."""
    return np.arccos(np.clip((a * b).sum(axis=-1), -1.0, 1.0))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _cluster_stats(U: np.ndarray, assign: np.ndarray, n_clusters: int):
    """For points U (T, m, 2): representatives (T, k, 2), max spread (T,), min gap (T,)."""
    onehot = np.eye(n_clusters)[assign]  # (m, k)
    reps = _unit(np.einsum("tmx,mk->tkx", U, onehot))
    spread = _angle_gap(U, reps[:, assign]).max(axis=1)
    T, k = reps.shape[:2]
    if k < 2:
        return reps, spread, np.full(T, np.pi)
    cos = np.einsum("tix,tjx->tij", reps, reps)
    gaps = np.arccos(np.clip(cos, -1.0, 1.0))
    gaps[:, np.arange(k), np.arange(k)] = np.inf
    return reps, spread, gaps.reshape(T, -1).min(axis=1)


def _apply(U: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Circle maps u ↦ (u + c)/‖u + c‖ for each try: U (m, 2), C (T, 2) -> (T, m, 2)."""
    return _unit(U[None] + C[:, None])


def _embed(X: np.ndarray, rng: np.random.Generator, tries: int):
    best = None
    for _ in range(tries):
        W0 = rng.normal(size=(3, X.shape[1]))
        b0 = 3.0 * rng.normal(size=3)
        U = _to_circle(ln_exact(X @ W0.T + b0))
        _, _, gap = _cluster_stats(U[None], np.arange(len(X)), len(X))
        if best is None or gap[0] > best[0]:
            best = (gap[0], W0, b0, U)
    return best


def _layer(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) on h that realise u ↦ (u + c)/‖u + c‖ on the circle."""
    return E @ E.T / np.sqrt(3.0), E @ c


def construct(X: np.ndarray, y: np.ndarray, seed: int = 0, merge_tries: int = 500,
              embed_tries: int = 200) -> Construction:
    """Build the width-3 net for binary labels ``y`` (both classes present, m ≥ 3)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y).astype(np.int64)
    m = len(X)
    if set(np.unique(y)) != {0, 1}:
        raise ValueError("y: labels must be binary (0/1) with both classes present")
    if m < 3:
        raise ValueError(f"n_points: need at least 3 points, got {m}")
    rng = np.random.default_rng([seed, 1])
    gap0, W0, b0, U = _embed(X, rng, embed_tries)
    if gap0 <= 0:
        raise ConstructionError(f"m={m}: two points coincide after the input layer")
    net = Construction(W0=W0, b0=b0, min_gap_per_layer=[float(gap0)])
    assign, labels = np.arange(m), y.copy()  # point -> cluster, cluster -> label

    def push(c: np.ndarray, U_new: np.ndarray, gap: float) -> np.ndarray:
        W, b = _layer(c)
        net.Ws.append(W)
        net.bs.append(b)
        net.min_gap_per_layer.append(float(gap))
        return U_new

    while len(labels) > 2:
        k = len(labels)
        reps, _, _ = _cluster_stats(U[None], assign, k)
        reps = reps[0]
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k) if labels[i] == labels[j]]
        if not pairs:
            break
        pair_gap = np.array([_angle_gap(reps[i], reps[j]) for i, j in pairs])
        candidates = [pairs[i] for i in np.argsort(pair_gap)[:MERGE_CANDIDATES]]
        pick = rng.integers(len(candidates), size=merge_tries)
        mag = 10.0 ** rng.uniform(-3.0, 0.5, size=merge_tries)
        t = np.where(rng.random(merge_tries) < 0.5, 1.0 + mag, -mag)
        ui = reps[[candidates[p][0] for p in pick]]
        uj = reps[[candidates[p][1] for p in pick]]
        C = -(ui + t[:, None] * (uj - ui))
        U_try = _apply(U, C)
        best = None
        for c_index, (i, j) in enumerate(candidates):  # one merged assignment per pair
            tries = np.flatnonzero(pick == c_index)
            if not len(tries):
                continue
            new_assign = np.unique(np.where(assign == j, i, assign), return_inverse=True)[1]
            _, spread, gap = _cluster_stats(U_try[tries], new_assign, k - 1)
            ok = spread < ACCEPT_SPREAD_FRACTION * gap
            if ok.any():
                top = int(np.argmax(np.where(ok, gap, -np.inf)))
                if best is None or gap[top] > best[0]:
                    best = (gap[top], int(tries[top]), new_assign, i, j)
        if best is None:
            raise ConstructionError(f"m={m}: no merge accepted with {k} clusters left "
                                    f"(float64 limits; try m <= 32 or more merge_tries)")
        gap, n_try, new_assign, i, j = best
        labels = np.delete(labels, j)
        assign = new_assign
        U = push(C[n_try], U_try[n_try], gap)
        if len(labels) > 2:
            rho = rng.uniform(0.0, SPREAD_RHO_MAX, size=merge_tries)
            phi = rng.uniform(-np.pi, np.pi, size=merge_tries)
            C = rho[:, None] * np.stack([np.cos(phi), np.sin(phi)], axis=1)
            U_try = _apply(U, C)
            _, spread, gap = _cluster_stats(U_try, assign, len(labels))
            score = gap - SPREAD_PENALTY * spread
            best_try = int(np.argmax(score))
            U = push(C[best_try], U_try[best_try], gap[best_try])
    reps, _, _ = _cluster_stats(U[None], assign, len(labels))
    p0, p1 = reps[0][labels == 0][0], reps[0][labels == 1][0]
    direction = p1 - p0
    net.w_out = E @ direction / np.sqrt(3.0)
    net.b_out = float(-direction @ (p0 + p1) / 2.0)
    return net
