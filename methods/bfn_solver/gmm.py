"""The no-training oracle: an exact Bayes denoiser for a Gaussian mixture fitted to digits.

A ``GaussianMixture(10, covariance_type="full", random_state=0)`` is fitted to scikit-learn's
digits scaled into [-1, 1] (x/8 - 1, 64-d). Given mu_t ~ N(alpha x, sigma^2 I) and component j
(weight pi_j, mean m_j, covariance S_j = U_j diag(s_j) U_j^T):
- the marginal of mu given j is N(alpha m_j, alpha^2 S_j + sigma^2 I), diagonal in U_j's basis;
- responsibilities w_j are computed in log space;
- E[x | mu, j] = m_j + U_j diag(alpha s_j / (alpha^2 s_j + sigma^2)) U_j^T (mu - alpha m_j);
and D(mu, t) = sum_j w_j E[x | mu, j], in float64, all samples and components at once. At
alpha = 0 (t = 0) the oracle returns the data mean (Graves' code returns 0 below t_min instead).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from methods._data import digits
from methods.bfn_solver.schedule import SIGMA1_SQ, alpha_sigma


@dataclass(frozen=True)
class GMM:
    weights: np.ndarray  # (J,)
    means: np.ndarray  # (J, d)
    covariances: np.ndarray  # (J, d, d)

    @property
    def dim(self) -> int:
        return int(self.means.shape[1])

    @property
    def mean(self) -> np.ndarray:
        return self.weights @ self.means

    @property
    def covariance(self) -> np.ndarray:
        mu = self.mean
        diff = self.means - mu
        return np.einsum("j,jab->ab", self.weights, self.covariances) + np.einsum("j,ja,jb->ab", self.weights, diff, diff)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        comp = rng.choice(len(self.weights), size=n, p=self.weights)
        chol = np.linalg.cholesky(self.covariances)
        z = rng.standard_normal((n, self.dim))
        return self.means[comp] + np.einsum("nab,nb->na", chol[comp], z)

    def transformed(self, perm: np.ndarray, signs: np.ndarray) -> GMM:
        """The mixture of x' = signs * x[perm] (an orthogonal map, so FD is unchanged)."""
        Q = np.diag(signs) @ np.eye(self.dim)[perm]
        return GMM(self.weights, self.means @ Q.T, Q @ self.covariances @ Q.T)

    def to_npz(self) -> dict[str, np.ndarray]:
        return {"weights": self.weights, "means": self.means, "covariances": self.covariances}


def digits_data() -> np.ndarray:
    """Digits scaled to [-1, 1] (float64), the BFN data range."""
    return digits()[0].astype(np.float64) * 2.0 - 1.0


def _cache_path() -> Path:
    import sklearn

    root = Path(os.environ.get("LABCOAT_CACHE", Path.home() / ".cache" / "labcoat"))
    return root / f"bfn_digits_gmm_sklearn{sklearn.__version__}.npz"


@lru_cache(maxsize=1)
def digits_gmm() -> GMM:
    """The fitted mixture. The EM fit takes seconds, so it is also cached on disk (best effort:
    ``$LABCOAT_CACHE`` or ``~/.cache/labcoat``, keyed by the scikit-learn version; a cache that
    cannot be read or written is simply skipped)."""
    path = _cache_path()
    try:
        with np.load(path) as f:
            return GMM(f["weights"], f["means"], f["covariances"])
    except (OSError, KeyError, ValueError):
        pass
    from sklearn.mixture import GaussianMixture

    gm = GaussianMixture(10, covariance_type="full", random_state=0).fit(digits_data())
    gmm = GMM(gm.weights_.astype(np.float64), gm.means_.astype(np.float64), gm.covariances_.astype(np.float64))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, **gmm.to_npz())
        os.replace(tmp, path)
    except OSError:
        pass
    return gmm


class GMMOracle:
    """D(mu, t) for a GMM; ``t`` a scalar or one value per row."""

    def __init__(self, gmm: GMM, sigma1_sq: float = SIGMA1_SQ) -> None:
        self.gmm = gmm
        self.sigma1_sq = sigma1_sq
        self.log_weights = np.log(gmm.weights)
        s, U = np.linalg.eigh(gmm.covariances)
        self.eigvals = np.clip(s, 0.0, None)  # (J, d)
        self.eigvecs = U  # (J, d, d)

    def __call__(self, mu: np.ndarray, t: np.ndarray | float) -> np.ndarray:
        mu = np.asarray(mu, dtype=np.float64)
        n, d = mu.shape
        a, sig = alpha_sigma(np.broadcast_to(np.asarray(t, dtype=np.float64), (n,)), self.sigma1_sq)
        at_prior = a <= 0
        a = np.where(at_prior, 1.0, a)  # placeholder rows, replaced by the data mean below
        sig2 = np.where(at_prior, 1.0, sig**2)
        J = len(self.log_weights)
        log_lik = np.empty((J, n))
        post = np.empty((J, n, d))
        for j in range(J):
            m, s, U = self.gmm.means[j], self.eigvals[j], self.eigvecs[j]
            c = (mu - a[:, None] * m) @ U  # coordinates in the eigenbasis
            v = a[:, None] ** 2 * s[None, :] + sig2[:, None]
            log_lik[j] = -0.5 * ((c**2 / v).sum(1) + np.log(v).sum(1) + d * np.log(2 * np.pi))
            post[j] = m + (c * (a[:, None] * s[None, :] / v)) @ U.T
        logw = self.log_weights[:, None] + log_lik
        logw -= logw.max(axis=0, keepdims=True)
        w = np.exp(logw)
        w /= w.sum(axis=0, keepdims=True)
        out = np.einsum("jn,jnd->nd", w, post)
        if at_prior.any():
            out[at_prior] = self.gmm.mean
        return out
