"""Reference: fit a mixture of Dirichlet-multinomials (with a size term) to the cohort by EM,
choosing K by held-out log-likelihood on a 20% split, then partition with the fitted MDM."""

from pathlib import Path

import numpy as np

from methods.fed_mdm import fit_mdm, mixture_loglik, partition_by_mdm, sizes_from_hist

DATA = Path(__file__).resolve().parent / "data"
COHORT = np.load(DATA / "cohort_counts.npy")
_MODEL = []  # the fit, computed once per process (it depends only on the fixed cohort)


def _size_edges(sizes):
    edges = np.unique(np.quantile(sizes, np.linspace(0, 1, 7)).round())
    edges[-1] += 1  # the largest size belongs to the last bin
    return edges


def fit():
    rng = np.random.default_rng(0)
    order = rng.permutation(len(COHORT))
    cut = int(0.8 * len(COHORT))
    train, val = COHORT[order[:cut]], COHORT[order[cut:]]
    edges = _size_edges(COHORT.sum(axis=1))
    scores = {}
    for k in range(1, 6):
        p = fit_mdm(train, k, size_bins=edges).params
        scores[k] = mixture_loglik(val, p.phi, p.alphas).mean()
    k = max(scores, key=scores.get)
    return fit_mdm(COHORT, k, size_bins=edges).params, edges


def partition(labels, seed):
    if not _MODEL:
        _MODEL.append(fit())
    params, edges = _MODEL[0]
    sampler = sizes_from_hist(params.size_hist, edges)
    clients, _ = partition_by_mdm(labels, params.phi, params.alphas, sampler, seed=seed)
    return [c.tolist() for c in clients]
