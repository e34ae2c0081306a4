"""Federated MDM (Scott & Cahill, ICML 2024): mixtures of Dirichlet-multinomials for federated
label skew, fitted by federated EM, and used to partition central data into realistic clients.

numpy/scipy only. The size term P(size bin | component) is optional (``size_bins``); the DP
noise (``dp_sigma``) is experimental and uncalibrated.
"""

# Lazy: the workbench imports this package to read tools.py, which must not pull in
# numpy/scipy/torch; attributes load their module on first use (PEP 562).
from importlib import import_module

_EXPORTS = {
    "MDMParams": "methods.fed_mdm.em",
    "aggregate": "methods.fed_mdm.em",
    "builtin_truth": "methods.fed_mdm.synthetic",
    "client_statistics": "methods.fed_mdm.em",
    "counts_to_proportions": "methods.fed_mdm.partition",
    "energy_distance": "methods.fed_mdm.partition",
    "fit_mdm": "methods.fed_mdm.em",
    "label_proportions": "methods.fed_mdm.partition",
    "log_dm": "methods.fed_mdm.dm",
    "log_multinomial_coef": "methods.fed_mdm.dm",
    "mixture_loglik": "methods.fed_mdm.dm",
    "partition_by_mdm": "methods.fed_mdm.partition",
    "resample_sizes": "methods.fed_mdm.partition",
    "sample_clients": "methods.fed_mdm.synthetic",
    "server_update": "methods.fed_mdm.em",
    "sizes_from_hist": "methods.fed_mdm.partition",
    "synthetic_split": "methods.fed_mdm.synthetic",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
