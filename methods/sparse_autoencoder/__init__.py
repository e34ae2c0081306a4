"""1-bit compression of sparse data with a sign encoder: GD, refits, denoisers, closed forms.

After Kögler, Shevchenko, Hassani & Mondelli, "Compression of Structured Data with
Autoencoders: Provable Benefit of Nonlinearities and Depth" (ICML 2024, arXiv 2402.05013).

[transition: reconstruction on sparse-Rademacher data; BG theorem constant from the ICML 2023
companion, unverified]

The encoder is z = sign(Bx) with sign(0) := +1 (so x = 0 encodes to all +1 and the identity
encoder profits from the bits' nonzero mean); the decoder is linear (x̂ = Az), optionally
followed by a per-coordinate posterior-mean denoiser fitted through Bussgang's decomposition.
Data are unit-variance per coordinate (x_i = mask·value/√p), methods2's choice; the paper may
use unscaled x, which changes constants but not the shape of any claim. The RI-GAMP multi-layer
decoder (the paper's "depth" claim) is not implemented: its form is unknown.
"""


from __future__ import annotations

import importlib

# Exports resolve lazily: importing methods.sparse_autoencoder.tools (as the workbench does to list
# tools) must never pull in numpy or torch.
_EXPORTS = {
    "bussgang_fit": "methods.sparse_autoencoder.decoders",
    "denoise": "methods.sparse_autoencoder.decoders",
    "encode": "methods.sparse_autoencoder.codec",
    "gaussian_benchmark": "methods.sparse_autoencoder.codec",
    "identity_closed_form": "methods.sparse_autoencoder.codec",
    "initial_encoder": "methods.sparse_autoencoder.training",
    "mse": "methods.sparse_autoencoder.decoders",
    "population_loss": "methods.sparse_autoencoder.training",
    "refit_linear": "methods.sparse_autoencoder.decoders",
    "row_gram_offdiag": "methods.sparse_autoencoder.codec",
    "row_max_entry": "methods.sparse_autoencoder.codec",
    "sample": "methods.sparse_autoencoder.data",
    "train_population": "methods.sparse_autoencoder.training",
    "train_surrogate": "methods.sparse_autoencoder.training",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
