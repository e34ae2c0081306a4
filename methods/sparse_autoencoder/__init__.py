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

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "codec": ["encode", "gaussian_benchmark", "identity_closed_form", "row_gram_offdiag", "row_max_entry"],
    "data": ["sample"],
    "decoders": ["bussgang_fit", "denoise", "mse", "refit_linear"],
    "training": ["initial_encoder", "population_loss", "train_population", "train_surrogate"],
})
