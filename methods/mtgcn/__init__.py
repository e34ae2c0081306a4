"""MTGCN (Pei et al., ICML 2024): multi-track message passing against heterophily mixing.

Library: :func:`methods.mtgcn.graph.csbm` (bundled CSBM generator),
:func:`methods.mtgcn.fit.fit` (MTGCN with its prior model and easy-node self-training, and the
single-track, GCN and MLP comparisons), :mod:`methods.mtgcn.models`. Tool: ``mtgcn_classify``.
"""
