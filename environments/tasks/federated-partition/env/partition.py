"""Simulate federated clients from the central digits labels.

Baseline: one symmetric Dirichlet, Dir(0.5), for every client's label mix, and client sizes
resampled from the observed cohort. The popping loop itself is labcoat's
(methods.fed_mdm.partition_by_mdm: draw a mix and a size, then pop indices class by class).
"""

from pathlib import Path

import numpy as np

from methods.fed_mdm import partition_by_mdm, resample_sizes

DATA = Path(__file__).resolve().parent / "data"
COHORT = np.load(DATA / "cohort_counts.npy")


def partition(labels, seed):
    """Disjoint lists of indices into ``labels``, one list per simulated client."""
    phi = np.ones(1)
    alphas = np.full((1, 10), 0.5)
    clients, _unused = partition_by_mdm(labels, phi, alphas, resample_sizes(COHORT.sum(axis=1)), seed=seed)
    return [c.tolist() for c in clients]
