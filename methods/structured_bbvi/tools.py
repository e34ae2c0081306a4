"""Tool metadata for ``python -m methods.structured_bbvi``: pydantic only, no torch import."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from methods.toolspec import ToolSpec, check_unique

GRID_STEP = 0.25
NAMED_GRIDS = {"authors": (-4.0, -2.75), "wide": (-3.5, -1.5)}


class BbviArgs(BaseModel):
    """Arguments of ``bbvi_hierarchical``."""

    model_config = ConfigDict(extra="forbid")

    n_groups: int = Field(16, ge=1, le=256, description="number of groups (local variables); d = d_global + n_groups*d_local")
    d_global: int = Field(2, ge=1, le=8, description="dimension of the global variable")
    d_local: int = Field(2, ge=1, le=8, description="dimension of each local variable")
    obs_per_group: int = Field(5, ge=1, le=100, description="observations per group")
    families: list[Literal["meanfield", "structured", "full_rank"]] = Field(
        default_factory=lambda: ["meanfield", "structured", "full_rank"],
        min_length=1,
        description="variational families: diagonal, bordered block-diagonal (O(N)), dense (O(N^2))",
    )
    optimizer: Literal["adam", "sgd"] = Field(
        "adam",
        description="'adam' (torch defaults, constant step 10^log10_lr) or 'sgd' (lr = c/lambda_max, "
        "diag(C) clamped; defaults to init 'identity' and 1 sample unless those are given)",
    )
    log10_lr: list[float] | Literal["authors", "wide"] = Field(
        "wide",
        description="Adam step sizes as log10 values, or 'authors' (-4..-2.75) / 'wide' (-3.5..-1.5), "
        "step 0.25",
    )
    sgd_c: list[float] = Field(
        default_factory=lambda: [0.5, 0.2, 0.1, 0.05, 0.02],
        min_length=1,
        description="SGD step constants c (lr = c / lambda_max of the posterior precision)",
    )
    mc_samples: int = Field(8, ge=1, le=256, description="Monte Carlo samples per iteration")
    steps: int = Field(5000, ge=1, le=100_000, description="iteration cap per step size")
    kl_tolerance: float = Field(0.5, gt=0, description="target: KL <= floor + kl_tolerance (floor 0 except mean-field)")
    eval_every: int = Field(100, ge=1, description="exact-KL check interval (iterations)")
    init: Literal["authors", "identity"] = Field(
        "authors",
        description="'authors': m = 0, diag(C) = sqrt(0.1) on globals and local_init on locals; "
        "'identity': C = I",
    )
    local_init: float = Field(1.0, gt=0, description="initial diagonal scale of the locals ('authors' init)")
    sgd_diag_min: float = Field(1e-4, gt=0, description="SGD projection: diag(C) >= this")
    problem_seed: int = Field(0, ge=0, description="seed of the data")
    workers: int = Field(
        2, ge=1, le=8, description="processes running step sizes in parallel (results do not depend on it)"
    )
    seed: int = Field(0, ge=0, description="seed of the Monte Carlo noise (shared by every step size)")

    @field_validator("log10_lr")
    @classmethod
    def _check_lrs(cls, v: list[float] | str) -> list[float] | str:
        if isinstance(v, list) and (not v or any(not -8.0 <= x <= 1.0 for x in v)):
            raise ValueError("give 1 or more values in [-8, 1]")
        return v

    @field_validator("sgd_c")
    @classmethod
    def _check_c(cls, v: list[float]) -> list[float]:
        if any(c <= 0 for c in v):
            raise ValueError("every c must be > 0")
        return v

    @field_validator("families")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        return check_unique(v, "family")

    def lr_grid(self) -> list[float]:
        """The log10 step sizes to sweep (Adam)."""
        if isinstance(self.log10_lr, list):
            return list(self.log10_lr)
        lo, hi = NAMED_GRIDS[self.log10_lr]
        count = round((hi - lo) / GRID_STEP) + 1
        return [lo + GRID_STEP * i for i in range(count)]


TOOLS = [
    ToolSpec(
        name="bbvi_hierarchical",
        description=(
            "Black-box VI on a Gaussian hierarchical regression with an exact posterior: for "
            "mean-field, structured (bordered block-diagonal) and full-rank Gaussian families, "
            "sweep step sizes and report the iterations each needs to reach KL <= floor + kl_tolerance, "
            "with KL curves and the per-step-size outcome."
        ),
        args_model=BbviArgs,
        module="methods.structured_bbvi",
        run="methods.structured_bbvi.run:run_tool",
    )
]
