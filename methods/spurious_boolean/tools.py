"""Tool metadata for ``python -m methods.spurious_boolean``: pydantic only, no torch import."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from methods.toolspec import ToolSpec, check_seeds


class SpuriousArgs(BaseModel):
    """Arguments of ``boolean_spurious_run``."""

    model_config = ConfigDict(extra="forbid")

    n_core: int = Field(10, ge=1, le=64, description="number of core bits x_c")
    n_spur: int = Field(10, ge=1, le=64, description="number of spurious bits x_s")
    k_core: int = Field(3, ge=1, description="degree of the core parity (the label), 1 <= k_core <= n_core")
    k_spur: int = Field(1, ge=1, description="degree of the spurious parity, 1 <= k_spur <= n_spur")
    spurious_prob: float = Field(0.9, ge=0.0, le=1.0, description="P(spurious target = label) in training data")
    steps: int = Field(8000, ge=0, le=200_000, description="SGD steps (fresh batch each step)")
    batch_size: int = Field(64, ge=1, le=4096, description="batch size")
    lr: float = Field(0.05, gt=0, description="SGD learning rate (no momentum, no weight decay)")
    width: int = Field(128, ge=1, le=4096, description="hidden ReLU units")
    seeds: int | list[int] = Field(
        default_factory=lambda: [0], description="int n means seeds 0..n-1; or a list of seeds"
    )
    eval_every: int = Field(100, ge=1, description="test-set check interval (steps)")
    target_acc: float = Field(0.95, gt=0, le=1, description="steps_to_core: first check with test accuracy above this")
    n_test: int = Field(4000, ge=10, le=100_000, description="balanced (lam = 0.5) test samples")
    test_seed: int = Field(999, ge=0, description="seed of the test set")
    stop_at_core: bool = Field(False, description="stop a run at its first check above target_acc")
    llr: bool = Field(False, description="also retrain the last layer on a small balanced set (LLR)")
    n_llr: int = Field(500, ge=10, le=100_000, description="balanced samples for LLR and the spurious probe")
    llr_C: float = Field(1.0, gt=0, description="inverse l2 strength of the LLR logistic regression")
    track: bool = Field(False, description="record test curves at every check")

    @field_validator("seeds")
    @classmethod
    def _check_seeds(cls, v: int | list[int]) -> int | list[int]:
        return check_seeds(v, 50)

    @model_validator(mode="after")
    def _degrees(self) -> SpuriousArgs:
        if self.k_core > self.n_core:
            raise ValueError(f"k_core: must be <= n_core = {self.n_core}")
        if self.k_spur > self.n_spur:
            raise ValueError(f"k_spur: must be <= n_spur = {self.n_spur}")
        return self


TOOLS = [
    ToolSpec(
        name="boolean_spurious_run",
        description=(
            "Train a one-hidden-layer ReLU net by online SGD on boolean data whose label is a "
            "core parity and whose spurious bits agree with it w.p. lam; report steps until the "
            "core is learned, worst-group accuracy, correlations with core and spurious targets, "
            "and optionally last-layer retraining (LLR) on a small balanced set."
        ),
        args_model=SpuriousArgs,
        module="methods.spurious_boolean",
        run="methods.spurious_boolean.run:run_tool",
    )
]
