"""D3S dataset distillation (Loo, Maalouf, Hasani, Lechner, Amini, Rus, ICML 2024) on digits.

Loss as restated by SPS §3.1 (KL between real and synthetic feature Gaussians of several
teachers, plus CE); CPU adaptations ours (random 16-d projections, a covariance ridge, eval-mode
post-BN features). Distribution matching (DM) and random real images are the comparisons; at
this scale DM wins.
"""

from methods._lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "data": ["Split", "load_digits_split", "load_npz_split", "load_split"],
    "distill": ["D3SObjective", "DistillConfig", "DistillResult", "dm_loss", "init_synthetic"],
    "models": ["PlainMLP", "Teacher", "accuracy", "train_teacher"],
    "stats": ["Gaussian", "gaussian_kl", "moments", "regularised"],
    "students": ["student_accuracies", "train_student"],
    "teachers": ["load_or_train"],
})
