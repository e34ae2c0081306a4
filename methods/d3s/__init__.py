"""D3S dataset distillation (Loo, Maalouf, Hasani, Lechner, Amini, Rus, ICML 2024) on digits.

Loss as restated by SPS §3.1 (KL between real and synthetic feature Gaussians of several
teachers, plus CE); CPU adaptations ours (random 16-d projections, a covariance ridge, eval-mode
post-BN features). Distribution matching (DM) and random real images are the comparisons; at
this scale DM wins.
"""

from methods.d3s.data import Split, load_digits_split, load_npz_split, load_split
from methods.d3s.distill import (
    D3SObjective,
    DistillConfig,
    DistillResult,
    distill,
    dm_loss,
    init_synthetic,
)
from methods.d3s.models import PlainMLP, Teacher, accuracy, train_teacher
from methods.d3s.stats import Gaussian, gaussian_kl, moments, regularised
from methods.d3s.students import student_accuracies, train_student
from methods.d3s.teachers import load_or_train

__all__ = [
    "D3SObjective", "DistillConfig", "DistillResult", "Gaussian", "PlainMLP", "Split", "Teacher",
    "accuracy", "distill", "dm_loss", "gaussian_kl", "init_synthetic", "load_digits_split",
    "load_npz_split", "load_or_train", "load_split", "moments", "regularised",
    "student_accuracies", "train_student", "train_teacher",
]
