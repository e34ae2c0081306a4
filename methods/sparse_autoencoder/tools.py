"""Tool declaration for the workbench (pydantic only; no torch at import)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from methods.toolspec import ToolSpec


class SparseAECompressArgs(BaseModel):
    """Arguments of ``sparse_ae_compress``."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["bg", "sparse_rademacher", "gaussian"] = Field(
        "bg", description="source: Bernoulli-Gaussian, sparse Rademacher or Gaussian, each "
        "coordinate unit-variance")
    p: float = Field(0.2, gt=0.0, le=1.0, description="density P(x_i != 0)")
    d: int = Field(96, ge=2, le=1024, description="input dimension")
    rate: float = Field(1.0, gt=0.0, le=1.0, description="bits per coordinate, n = round(rate*d)")
    encoder_init: Literal["gaussian", "rotation", "identity"] = Field(
        "gaussian", description="initial B: iid N(0,1/d), a random rotation, or the identity "
        "(rate 1 only)")
    train: Literal["population", "surrogate", "none"] = Field(
        "population", description="population: exact expected loss over random masks "
        "(bg/gaussian); surrogate: sample MSE with tanh(beta*Bx); none: keep B, "
        "A = sqrt(2/pi) * row-normalised B^T")
    steps: int | None = Field(None, ge=0, le=100_000, description="GD steps; default 300 for "
                              "population, 1500 for surrogate")
    lr: float | None = Field(None, gt=0.0, description="Adam learning rate; default 2e-2 for "
                             "population, 3e-2 for surrogate (cosine-decayed to 0)")
    masks_per_step: int = Field(16, ge=1, le=4096, description="population: masks per step")
    batch_size: int = Field(512, ge=1, le=100_000, description="surrogate: samples per step")
    beta_start: float = Field(2.0, gt=0.0, description="surrogate: initial tanh slope")
    beta_end: float = Field(100.0, gt=0.0, description="surrogate: final tanh slope")
    decoder: Literal["linear", "denoiser"] = Field(
        "linear", description="linear A·z, or A·z followed by the data's posterior-mean "
        "denoiser (Bussgang fit)")
    refit: bool | None = Field(None, description="replace A by the least-squares decoder; "
                               "default true for surrogate, false otherwise")
    n_refit: int = Field(200_000, ge=100, le=2_000_000, description="samples for the refit")
    n_fit: int = Field(20_000, ge=100, le=2_000_000, description="samples for the Bussgang fit")
    n_test: int = Field(50_000, ge=100, le=2_000_000, description="test samples for every MSE")
    baselines: bool = Field(False, description="also report identity and rotation MSEs with "
                            "refit linear decoders")
    seed: int = Field(0, ge=0, description="seed of every random stream")
    out: str = Field("sparse_ae.npz", description="where to write B and A")

    @model_validator(mode="after")
    def _check(self) -> SparseAECompressArgs:
        if self.train == "population" and self.source == "sparse_rademacher":
            raise ValueError("train: population needs bg or gaussian data (use surrogate)")
        if self.encoder_init == "identity" and round(self.rate * self.d) != self.d:
            raise ValueError("encoder_init: identity needs n = d (rate 1)")
        if round(self.rate * self.d) < 1:
            raise ValueError("rate: rate*d must round to at least one bit")
        return self


TOOLS = [
    ToolSpec(
        name="sparse_ae_compress",
        description=(
            "1-bit compression z = sign(Bx) of sparse data with a linear or denoising decoder "
            "(Kögler et al., ICML 2024): trains B and A by population or surrogate GD and "
            "reports the MSE against the Gaussian benchmark 1 - 2r/pi, closed forms, "
            "identity/rotation baselines and how localised the rows of B are."
        ),
        args_model=SparseAECompressArgs,
        module="methods.sparse_autoencoder",
        run="methods.sparse_autoencoder.run:sparse_ae_compress",
    )
]
