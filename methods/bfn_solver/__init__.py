"""BFN-Solver (Xue et al., ICML 2024): fast samplers for continuous Bayesian Flow Networks.

Library: :mod:`methods.bfn_solver.samplers` (original BFN sampler, ODE ++1 / ++2M, SDE ++2M),
:mod:`methods.bfn_solver.gmm` (exact GMM Bayes denoiser on digits), :mod:`methods.bfn_solver.mlp`
(a small trained eps-network), :mod:`methods.bfn_solver.fd` (Fréchet distance).
Tool: ``bfn_sample``.
"""
