"""LoRA library (Ostapenko et al., ICML 2024): model-based clustering (MBC) of tasks by their
LoRA parameters, one LoRA per cluster, and Arrow zero-shot routing by each LoRA's top singular
vector, per token and per layer. CPU scale: a frozen 32-64-8 MLP and synthetic task families.
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "arrow": ["arrow_logits", "arrow_prototypes", "arrow_route", "mixture_delta"],
    "mbc": ["MBCResult", "mbc_cluster", "sparsify_rows"],
    "synthetic": ["build_library", "evaluate_library", "routed_forward"],
})
