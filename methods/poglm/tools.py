"""Tool declaration for the differentiable POGLM: ``poglm_fit``. Imports only pydantic."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from methods.toolspec import ToolSpec


class FitArgs(BaseModel):
    """Arguments of ``poglm_fit``."""

    model_config = ConfigDict(extra="forbid")

    spikes_npz: str | None = Field(
        None,
        description="npz with visible spikes 'train' and 'test' (S,T,N_vis) and optionally ground truth "
        "'hidden_train', 'hidden_test' (S,T,H), 'W' (N,N), 'b' (N,); null generates data",
    )
    generator: Literal["strong_drive", "paper"] = Field(
        "strong_drive", description="synthetic generator (3 visible neurons) used when spikes_npz is null"
    )
    n_train: int = Field(40, ge=1, description="generated training sequences")
    n_test: int = Field(20, ge=1, description="generated test sequences")
    n_bins: int = Field(100, ge=6, description="time bins per generated sequence")
    n_hidden: int = Field(2, ge=1, le=6, description="hidden neurons in the model")
    q: Literal["F", "FS", "FB"] = Field(
        "FB", description="posterior: F (past visible), FB (past and future visible), FS (F + own hidden history; slow)"
    )
    estimator: Literal["score", "gs_pathwise"] = Field(
        "gs_pathwise", description="gs_pathwise (Gumbel-softmax relaxation) or score (REINFORCE, Poisson samples)"
    )
    tau: float | None = Field(None, gt=0, description="Gumbel-softmax temperature (default 0.5; 1.0 for score, where it is unused)")
    n_categories: int = Field(5, ge=2, le=20, description="categories of the relaxed count {0..K-1}")
    epochs: int = Field(20, ge=1, description="training epochs")
    batch_size: int = Field(10, ge=1, description="sequences per batch")
    mc_samples: int = Field(5, ge=1, description="Monte-Carlo samples per sequence in the training ELBO")
    lr_p: float = Field(0.05, gt=0, description="Adam learning rate of the GLM p")
    lr_q: float = Field(0.1, gt=0, description="Adam learning rate of the posterior q")
    fix_p: bool = Field(False, description="keep p at the ground truth and fit q only (needs the truth)")
    eval_samples: int = Field(2000, ge=1, description="importance samples per test sequence")
    grad_var_repeats: int = Field(50, ge=0, description="repeats of the gradient-variance probe (0 skips it)")
    seed: int = Field(0, description="seed of the data generation and the fit")


TOOLS = [
    ToolSpec(
        name="poglm_fit",
        description="Fit a partially observable spiking GLM (hidden neurons) by variational inference "
        "with Gumbel-softmax pathwise or score-function gradients and an F/FB/FS posterior; reports "
        "test ELBO, marginal log-likelihood, gradient variance and weight recovery.",
        args_model=FitArgs,
        module="methods.poglm",
        run="methods.poglm.run:fit_tool",
    )
]
