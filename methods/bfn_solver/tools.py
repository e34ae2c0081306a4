"""Tool declaration for BFN-Solver: ``bfn_sample``. Imports only pydantic and the tool spec."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from methods.toolspec import ToolSpec


class SampleArgs(BaseModel):
    """Arguments of ``bfn_sample``."""

    model_config = ConfigDict(extra="forbid")

    denoiser: str = Field(
        "oracle_gmm",
        description="oracle_gmm (exact Bayes denoiser of a 10-component GMM fitted to digits), "
        "'mlp:train' (train a small eps-network first, about 10-20 s) or 'mlp:<path>' (a saved one)",
    )
    sampler: Literal["bfn", "ode1", "ode2m", "sde2m"] = Field(
        "ode2m", description="bfn (original BFN sampler), ode1 (BFN-Solver++1), ode2m (++2M multistep), sde2m (SDE-++2M)"
    )
    nfe: int = Field(10, ge=1, le=1000, description="denoiser calls (the BFN sampler counts its final call)")
    n_samples: int = Field(1000, ge=2, le=20000, description="samples to draw")
    eta: float = Field(0.01, gt=0, lt=1, description="start time of the solvers' grid")
    sigma1_sq: float = Field(1e-6, gt=0, lt=1, description="BFN sigma_1^2")
    init: Literal["zero_mean_and_std", "optimal_mean_and_std"] = Field(
        "zero_mean_and_std", description="solver initialisation at t = eta"
    )
    last_drop: bool = Field(True, description="return the last x_hat instead of stepping to t = 1")
    seed: int = Field(0, description="seed of the sampler (the reference set uses its own fixed seed)")
    out: str = Field("bfn_samples.npz", description="npz written with the samples")

    @field_validator("denoiser")
    @classmethod
    def _denoiser(cls, v: str) -> str:
        if v == "oracle_gmm" or (v.startswith("mlp:") and len(v) > 4):
            return v
        raise ValueError("must be 'oracle_gmm', 'mlp:train' or 'mlp:<path>'")


TOOLS = [
    ToolSpec(
        name="bfn_sample",
        description="Sample a continuous Bayesian Flow Network with the original sampler or a "
        "BFN-Solver (ODE ++1, ++2M, SDE ++2M) at a given number of denoiser calls, on a digits "
        "GMM oracle or a small trained network; reports the Fréchet distance to fresh data.",
        args_model=SampleArgs,
        module="methods.bfn_solver",
        run="methods.bfn_solver.run:sample_tool",
    )
]
