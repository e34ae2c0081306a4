"""Tool declaration for the flip accuracy estimator (pydantic only; no torch import here)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from methods.toolspec import ToolSpec

ShiftKind = Literal["noise", "blur", "rot", "drop", "contrast", "shift"]


class ShiftSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: ShiftKind = Field(description="corruption kind")
    severity: int = Field(ge=1, le=5, description="severity 1..5")


class FlipArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(None, description="'pkg.module:Name' of an nn.Module class or factory with BatchNorm layers; default: the built-in digits BN-MLP")
    checkpoint: str | None = Field(None, description="state_dict file (loaded with weights_only=True); default: train the built-in source model (seed 0) and cache it")
    data: str = Field("digits_shifts", description="'digits_shifts' (30 built-in shifted digits sets) or an npz path with `X` (n x features) and optional `y`")
    shifts: Literal["all"] | list[ShiftSpec] = Field("all", description="which built-in shifts to use")
    steps: int = Field(300, ge=0, le=20_000, description="entropy-minimisation steps")
    lr: float = Field(5e-3, gt=0, description="SGD learning rate on the BN affine parameters")
    batch_size: int = Field(64, ge=2, description="batch size (drawn with replacement)")
    momentum: float = Field(0.9, ge=0, lt=1, description="SGD momentum")
    eata_filter: bool = Field(False, description="EATA/RDumb loss (reliability + redundancy filters, weighted entropy); false = Tent's mean entropy")
    e0_frac: float = Field(0.4, gt=0, description="E0 = e0_frac * ln(classes)")
    d_margin: float = Field(0.05, gt=0, description="redundancy filter: keep if |cos(p_bar, p)| < d_margin")
    reset_every: int = Field(1000, ge=1, description="restore model and optimizer every this many steps")
    reset_clears_p_bar: bool = Field(False, description="the periodic reset also forgets EATA's running mean p_bar (authors' RDumb); false keeps it")
    reference: Literal["batch_stats", "running_stats"] = Field("batch_stats", description="iteration-0 labels from the batch-stat model (authors) or from the source model with running stats")
    fit: Literal["loco", "authors", "none"] = Field("loco", description="map flips to accuracy: quadratic leave-one-corruption-out, the authors' ResNet-50 polynomial, or none")
    calibration: str | None = Field(None, description="npz with `features` (weighted flips, fractions) and `accs` (fractions): fit a quadratic once on these instead")
    eval_batch: int = Field(0, ge=0, description="batch size for reading labels under batch statistics; 0 = whole set")
    seed: int = Field(0, description="seed of the EM batch stream")


TOOLS = [
    ToolSpec(
        name="flip_accuracy_estimate",
        description=(
            "Label-free accuracy estimation (Entropy Enigma): run test-time entropy minimisation on "
            "the BatchNorm affine parameters over unlabelled sets, count the top-1 labels that flip "
            "(weighted by confidence rank), and map flips to the un-adapted model's accuracy."
        ),
        args_model=FlipArgs,
        module="methods.entropy_enigma",
        run="methods.entropy_enigma.run:flip_accuracy_estimate",
    )
]
