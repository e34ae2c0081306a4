"""Federated MDM (Scott & Cahill, ICML 2024): mixtures of Dirichlet-multinomials for federated
label skew, fitted by federated EM, and used to partition central data into realistic clients.

numpy/scipy only. The size term P(size bin | component) is optional (``size_bins``); the DP
noise (``dp_sigma``) is experimental and uncalibrated.
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "dm": ["log_dm", "log_multinomial_coef", "mixture_loglik"],
    "em": ["MDMParams", "aggregate", "client_statistics", "fit_mdm", "server_update"],
    "partition": ["counts_to_proportions", "energy_distance", "label_proportions", "partition_by_mdm", "resample_sizes", "sizes_from_hist"],
    "synthetic": ["builtin_truth", "sample_clients", "synthetic_split"],
})
