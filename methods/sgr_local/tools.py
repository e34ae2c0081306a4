"""Tool declaration for the workbench (pydantic only; no torch at import)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from methods.toolspec import ToolSpec


class LocalLearningTrainArgs(BaseModel):
    """Arguments of ``local_learning_train``."""

    model_config = ConfigDict(extra="forbid")

    data: str = Field("digits", description='"digits" (sklearn digits, 70/30 stratified split, '
                      "seed 0) or an .npz path with X_train, y_train, X_test, y_test")
    depth: int = Field(8, ge=1, le=64, description="number of gradient-isolated modules "
                       "(>= 2 for sgr)")
    width: int = Field(64, ge=1, le=4096, description="hidden width of every module")
    method: Literal["bp", "local", "sgr"] = Field(
        "sgr", description="bp: end-to-end backprop; local: per-module CE on detached inputs; "
        "sgr: local + successive gradient reconciliation penalty")
    sgr_weight: float = Field(1.0, ge=0.0, description="weight of the SGR penalty")
    distance: Literal["l2", "cosine"] = Field(
        "l2", description="SGR distance: per-sample squared L2, or 1 - per-sample cosine")
    epochs: int = Field(40, ge=1, le=1000, description="training epochs")
    lr: float = Field(1e-3, gt=0.0, description="Adam learning rate")
    batch_size: int = Field(64, ge=1, description="minibatch size")
    bp_residual: bool = Field(False, description="BP only: identity skips h + ReLU(Wh + b)")
    measure_memory: bool = Field(True, description="count autograd-saved bytes on the first "
                                 "batch, and for one BP step at the same depth")
    seed: int = Field(0, ge=0, description="model init and shuffling seed")
    out: str | None = Field(None, description="optional checkpoint path (.pt)")

    @model_validator(mode="after")
    def _check(self) -> LocalLearningTrainArgs:
        if self.method == "sgr" and self.depth < 2:
            raise ValueError("depth: sgr needs at least 2 modules")
        if self.bp_residual and self.method != "bp":
            raise ValueError("bp_residual: only valid with method='bp'")
        return self


TOOLS = [
    ToolSpec(
        name="local_learning_train",
        description=(
            "Train a deep MLP with gradient-isolated local learning (per-module heads), "
            "optionally with successive gradient reconciliation (Yang et al., ICML 2024, "
            "reconstructed), or with end-to-end BP; reports accuracy, the cross-module gradient "
            "cosine, autograd-saved memory relative to BP and an isolation check."
        ),
        args_model=LocalLearningTrainArgs,
        module="methods.sgr_local",
        run="methods.sgr_local.run:local_learning_train",
    )
]
