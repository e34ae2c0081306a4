"""LoRA library (Ostapenko et al., ICML 2024): model-based clustering (MBC) of tasks by their
LoRA parameters, one LoRA per cluster, and Arrow zero-shot routing by each LoRA's top singular
vector, per token and per layer. CPU scale: a frozen 32-64-8 MLP and synthetic task families.
"""

# Lazy: the workbench imports this package to read tools.py, which must not pull in
# numpy/scipy/torch; attributes load their module on first use (PEP 562).
from importlib import import_module

_EXPORTS = {
    "MBCResult": "methods.lora_library.mbc",
    "arrow_logits": "methods.lora_library.arrow",
    "arrow_prototypes": "methods.lora_library.arrow",
    "arrow_route": "methods.lora_library.arrow",
    "build_library": "methods.lora_library.synthetic",
    "evaluate_library": "methods.lora_library.synthetic",
    "mbc_cluster": "methods.lora_library.mbc",
    "mixture_delta": "methods.lora_library.arrow",
    "routed_forward": "methods.lora_library.synthetic",
    "sparsify_rows": "methods.lora_library.mbc",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
