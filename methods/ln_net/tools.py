"""Tool declarations for the workbench (pydantic only; no torch at import)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from methods.toolspec import ToolSpec


class LNCapacityArgs(BaseModel):
    """Arguments of ``ln_capacity``."""

    model_config = ConfigDict(extra="forbid")

    n_points: int = Field(256, ge=2, le=100_000, description="number of points")
    d: int = Field(8, ge=1, le=4096, description="input dimension")
    n_classes: int = Field(2, ge=2, le=1000, description="number of random classes")
    data: str = Field("gaussian", description='"gaussian" (X ~ N(0, I), uniform random labels) '
                      "or an .npz path with X (m, d) and integer y")
    width: int = Field(16, ge=1, le=4096, description="hidden width")
    depth: int = Field(6, ge=1, le=256, description="number of norm layers")
    groups: int = Field(1, ge=0, description="LN groups per layer (must divide width); "
                        "0 = no norms (the linear baseline)")
    steps: int = Field(800, ge=0, le=100_000, description="full-batch Adam steps")
    lr: float = Field(3e-3, gt=0.0, description="Adam learning rate")
    norm_eps: float = Field(1e-5, ge=0.0, description="epsilon inside the norm's variance")
    compare_linear: bool = Field(True, description="also train the same net with the norms "
                                 "removed")
    data_seed: int = Field(0, ge=0, description="seed of the random data")
    seed: int = Field(0, ge=0, description="seed of the model initialisation")

    @model_validator(mode="after")
    def _check(self) -> LNCapacityArgs:
        if self.groups > 0 and self.width % self.groups:
            raise ValueError(f"groups: {self.groups} does not divide width {self.width}")
        return self


class LNConstructArgs(BaseModel):
    """Arguments of ``ln_construct``."""

    model_config = ConfigDict(extra="forbid")

    n_points: int = Field(16, ge=3, le=64, description="number of points (above 32 float64 may fail)")
    d: int = Field(8, ge=1, le=4096, description="input dimension")
    data: str = Field("gaussian", description='"gaussian" (X ~ N(0, I), random binary labels) '
                      "or an .npz path with X (m, d) and binary y")
    seed: int = Field(0, ge=0, description="data and search seed")
    merge_tries: int = Field(500, ge=1, le=100_000, description="random tries per layer")
    embed_tries: int = Field(200, ge=1, le=100_000, description="random input layers tried")
    out: str = Field("ln_construct.npz", description="where to write the weights")


TOOLS = [
    ToolSpec(
        name="ln_capacity",
        description=(
            "Train an activation-free LN-Net (linear layers + LayerNorm or grouped LN-G) on "
            "random labels and compare with the same net without norms (Ni et al., ICML 2024); "
            "reports training accuracy, parameters and the LSSR of input and last hidden layer."
        ),
        args_model=LNCapacityArgs,
        module="methods.ln_net",
        run="methods.ln_net.run:ln_capacity",
        entry="ln_capacity",
    ),
    ToolSpec(
        name="ln_construct",
        description=(
            "Build (no training) a width-3 LN-Net with 2m-4 LayerNorm layers that classifies "
            "any binary labelling of m points exactly, by merging same-label clusters on the "
            "circle LN maps R^3 onto (a reconstruction of the paper's capacity theorem)."
        ),
        args_model=LNConstructArgs,
        module="methods.ln_net",
        run="methods.ln_net.run:ln_construct",
        entry="ln_construct",
    ),
]
