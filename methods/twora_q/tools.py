"""Tool declaration for 2RA Q-learning (pydantic only: the workbench reads this without numpy)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from methods.toolspec import ToolSpec


class QEstimationArgs(BaseModel):
    """Arguments of ``q_estimation_run``; ``None`` means "the default for this env"."""

    model_config = ConfigDict(extra="forbid")

    env: Literal["random", "maxbias"] = Field(
        "random",
        description="'random': 10-state, 3-action random MDP (reports MSE and bias against Q*); "
        "'maxbias': Sutton & Barto's maximisation-bias MDP (reports % of runs going left).",
    )
    method: Literal["q", "double", "2ra", "maxmin"] = Field(
        "2ra", description="Q-learning, Double Q, 2RA (robust averaging) or Maxmin."
    )
    n_tables: int | None = Field(None, ge=1, le=100, description="number of tables for 2ra/maxmin (default 10 random, 5 maxbias)")
    rho0: float | None = Field(None, ge=0, description="ambiguity radius rho for 2ra (default 50 random, 0.5 maxbias)")
    rho_schedule: Literal["t2", "t", "const"] | None = Field(
        None, description="rho_t = rho*w/(t^2+w) ('t2'), rho*w/(t+w) ('t') or rho ('const'); default t2 random, t maxbias"
    )
    rho_weight: int | None = Field(None, ge=1, description="w in the rho schedule (default 10000 random, 100 maxbias)")
    alpha0: float | None = Field(
        None, gt=0, le=1, description="base step size, multiplied by n_tables for 2ra/maxmin and by 2 for double when scale_step (default 0.01 random, 0.1 maxbias)"
    )
    alpha_weight: int | None = Field(
        None, ge=1, description="w in alpha_t = alpha0*w/(t+w); null = constant (default 100000 random, constant maxbias)"
    )
    scale_step: bool = Field(True, description="scale each table's step by its update share (maxbias caps it at 1)")
    double_variant: Literal["van_hasselt", "authors"] = Field(
        "van_hasselt", description="Double Q: argmax from the updated table ('van_hasselt') or from the other ('authors')"
    )
    steps: int = Field(100_000, ge=1, le=2_000_000, description="random env: transitions per run")
    episodes: int = Field(300, ge=1, le=100_000, description="maxbias env: episodes per run")
    runs: int | None = Field(None, ge=1, le=20_000, description="independent runs, vectorised (default 20 random, 2000 maxbias)")
    env_seed: int = Field(1234, description="seed of the random MDP's transition matrix")
    seed: int = Field(0, description="seed of the transition stream and of the table choices")
    log_every: int = Field(10_000, ge=1, description="random env: log the MSE every this many steps")
    gamma: float | None = Field(None, ge=0, le=1, description="discount (default 0.9 random, 1.0 maxbias)")
    epsilon: float = Field(0.1, ge=0, le=1, description="maxbias env: epsilon-greedy exploration")


TOOLS = [
    ToolSpec(
        name="q_estimation_run",
        description=(
            "Run tabular Q-learning, Double Q, Maxmin or 2RA (Regularized Q-learning through Robust "
            "Averaging: n_tables tables, target from their mean minus sqrt(rho_t)) on a random MDP or the "
            "maximisation-bias MDP; reports the MSE curve and bias against Q*, or % left at A."
        ),
        args_model=QEstimationArgs,
        module="methods.twora_q",
        run="methods.twora_q.run:q_estimation_run",
    )
]
