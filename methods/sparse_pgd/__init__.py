"""Sparse-PGD (Zhong, Huang & Liu, ICML 2024): l0 attacks, the sAA evaluation, sparse adversarial training.

Library entry points: :func:`methods.sparse_pgd.evaluate.run_attack` (any attack, any classifier),
:func:`methods.sparse_pgd.spgd.spgd_batch` (the attack itself) and
:func:`methods.sparse_pgd.training.adversarial_train` (sAT / sTRADES). Tools: ``sparse_attack``
and ``sparse_adv_train`` (``python -m methods.sparse_pgd attack|train``).
"""
