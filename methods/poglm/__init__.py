"""Differentiable POGLM (Li, Li, Wang & Wu, ICML 2024): spiking GLMs with hidden neurons.

Library: :mod:`methods.poglm.glm` (model and generators), :mod:`methods.poglm.relax`
(Gumbel-softmax counts), :mod:`methods.poglm.posterior` (F / FB / FS posteriors),
:mod:`methods.poglm.inference` (pathwise and score ELBOs, fitting, evaluation).
Tool: ``poglm_fit``.
"""
