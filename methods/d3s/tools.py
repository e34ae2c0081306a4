"""Tool metadata for ``python -m methods.d3s``: pydantic only, no torch import."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from methods.toolspec import ToolSpec

DATA_HELP = (
    "'digits' (sklearn's bundled digits, the spec's 1200/597 split) or the path of an npz with "
    "X_train (n, 64) and y_train (n,), optionally X_test/y_test"
)


class DistillArgs(BaseModel):
    """Arguments of ``distill``."""

    model_config = ConfigDict(extra="forbid")

    ipc: int = Field(1, ge=1, le=50, description="distilled images per class")
    method: Literal["d3s", "dm", "random_real"] = Field(
        "d3s",
        description="'d3s' (match teachers' feature Gaussians + CE), 'dm' (distribution matching "
        "with random MLPs) or 'random_real' (the initial real images, not optimised)",
    )
    steps: int = Field(500, ge=0, le=20_000, description="Adam steps on the pixels")
    lr: float = Field(0.01, gt=0, description="Adam learning rate on the pixels")
    lam_kl: float = Field(1.0, ge=0, description="weight of the feature-Gaussian KL (d3s)")
    lam_ce: float = Field(1.0, ge=0, description="weight of the teachers' cross-entropy (d3s)")
    teacher_seeds: list[int] = Field(
        default_factory=lambda: [0, 10, 11], min_length=1, max_length=8,
        description="teacher seeds (the first one also makes the soft labels)",
    )
    teacher_bn: bool = Field(True, description="teachers with BatchNorm after each hidden layer")
    features: Literal["post_bn", "post_relu"] = Field(
        "post_bn", description="which hidden features are matched: post-BN pre-ReLU or post-ReLU"
    )
    proj_dim: int = Field(16, ge=0, le=128, description="random projection of each 128-d layer (0 = none)")
    eps_rel: float = Field(0.01, gt=0, description="covariance ridge, relative to the real mean variance")
    soft_tau: float = Field(2.0, gt=0, description="temperature of the teacher soft labels")
    init_seed: int = Field(0, ge=0, description="seed of the random real initial images")
    data: str = Field("digits", description=DATA_HELP)
    out: str = Field("distilled.npz", description="output npz (X, y, y_soft, meta)")
    cache_dir: str = Field(".cache/d3s", description="where trained teachers are cached")

    @field_validator("out")
    @classmethod
    def _npz(cls, v: str) -> str:
        if not v.endswith(".npz"):
            raise ValueError("must end in .npz")
        return v


class EvaluateArgs(BaseModel):
    """Arguments of ``evaluate_distilled``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field("distilled.npz", description="npz with X (n, 64) and y (int) and/or y_soft / Y")
    labels: Literal["hard", "soft"] = Field("hard", description="train students on hard labels or soft targets")
    student_seeds: list[int] = Field(default_factory=lambda: [1, 2, 3], min_length=1, max_length=20,
                                     description="one student per seed")
    epochs: int = Field(300, ge=1, le=20_000, description="full-batch Adam steps per student")
    lr: float = Field(1e-3, gt=0, description="student learning rate")
    train_acc: bool = Field(False, description="also score the students on the training images")
    data: str = Field("digits", description=DATA_HELP + "; without a test split, acc is on the training images")


TOOLS = [
    ToolSpec(
        name="distill",
        description=(
            "Dataset distillation on digits: make IPC synthetic images per class by D3S (match the "
            "teachers' feature Gaussians, KL real||synthetic, plus CE), distribution matching or "
            "random real images; writes an npz with images, labels and teacher soft labels."
        ),
        args_model=DistillArgs,
        module="methods.d3s",
        run="methods.d3s.run:run_distill",
        entry="distill",
    ),
    ToolSpec(
        name="evaluate_distilled",
        description=(
            "Train plain MLP students (fixed protocol) on a distilled npz with hard or soft labels "
            "and report their test accuracy (mean, s.e., per seed)."
        ),
        args_model=EvaluateArgs,
        module="methods.d3s",
        run="methods.d3s.run:run_evaluate",
        entry="evaluate_distilled",
    ),
]
