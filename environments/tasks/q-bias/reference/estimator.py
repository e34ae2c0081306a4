"""2RA (Regularized Q-learning through Robust Averaging): N = 10 tables; the target is the mean
table's max minus sqrt(rho_t), the worst case over an l2 ambiguity ball whose radius
rho_t = 50 * 1e4 / (t^2 + 1e4) fades, so the estimate stays consistent."""

import numpy as np

N = 10
RHO, RHO_WEIGHT = 50.0, 1e4


def target(Q, r, s2, t, gamma, beta):
    runs = np.arange(Q.shape[1])
    mean_next = Q[:, runs, s2].mean(axis=0)  # (runs, A)
    rho_t = RHO * RHO_WEIGHT / (t * t + RHO_WEIGHT)
    return r + gamma * (mean_next.max(axis=-1) - np.sqrt(rho_t))


def estimate(Q):
    return Q.mean(axis=0)
