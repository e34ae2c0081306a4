"""Tool metadata for ``python -m methods.online_lp``: pydantic only, no numpy/scipy import."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from methods.toolspec import ToolSpec, check_seeds, check_unique

MethodName = Literal["subgradient", "explore_exploit", "concurrent"]


class OnlineLpArgs(BaseModel):
    """Arguments of ``online_lp_regret``."""

    model_config = ConfigDict(extra="forbid")

    horizon: int = Field(32000, ge=100, le=1_000_000, description="number of arrivals T (the horizon)")
    n_resources: int = Field(4, ge=1, le=20, description="number of resources")
    budget_per_arrival: float | list[float] = Field(
        0.25,
        description="budget per arrival, in (0,1): one float for every resource or a list of m "
        "floats (in 'scaled' this is the base budget, multiplied by the instance's scales u)",
    )
    family: Literal["uniform", "scaled", "correlated"] = Field(
        "uniform",
        description="arrival distribution: 'uniform' (a, c ~ U[0,1]), 'scaled' (uniform rescaled "
        "by random per-instance u, s; regret/s is comparable) or 'correlated' (c depends on a)",
    )
    methods: list[MethodName] = Field(
        default_factory=lambda: ["subgradient", "explore_exploit", "concurrent"],
        min_length=1,
        description="which online methods to run on the same arrivals",
    )
    seeds: int | list[int] = Field(
        6, description="int n means seeds 0..n-1; or an explicit list of seeds"
    )
    alpha_scale: float = Field(1.0, ge=0, description="subgradient step constant c_α (α = c_α/√T)")
    explore_scale: float = Field(
        1.0, ge=0, description="explore→exploit: decision step during exploration c_e (α_e = c_e/√T_e)"
    )
    learn_scale: float = Field(
        0.5, ge=0, description="learning-dual step constant c_η (η_t = c_η/√t), both methods"
    )
    exploit_scale: float = Field(
        10.0, ge=0, description="explore→exploit: exploitation step c_x (α_x = c_x·T^(-2/3))"
    )
    explore_len_scale: float = Field(
        1.0, gt=0, description="explore→exploit: exploration length κ (T_e = ceil(κ·T^(2/3)))"
    )
    conc_step_scale: float = Field(
        10.0, ge=0, description="concurrent: decision step c_D (α_D = c_D·T^(-2/3))"
    )
    radius_scale: float | None = Field(
        5.0, ge=0, description="concurrent: ball radius c_r (r = c_r·T^(-1/3)); null = no ball"
    )
    trace_every: int = Field(
        0, ge=0, description="0 = off; else record the decision price y^D every this many arrivals"
    )

    @field_validator("budget_per_arrival")
    @classmethod
    def _check_d(cls, v: float | list[float], info) -> float | list[float]:
        values = [v] if isinstance(v, (int, float)) else v
        if not all(0.0 < x < 1.0 for x in values):
            raise ValueError("every budget must lie in (0, 1)")
        m = info.data.get("n_resources")
        if isinstance(v, list) and m is not None and len(v) != m:
            raise ValueError(f"a list must hold n_resources = {m} floats, got {len(v)}")
        return v

    @field_validator("seeds")
    @classmethod
    def _check_seeds(cls, v: int | list[int]) -> int | list[int]:
        return check_seeds(v, 200)

    @field_validator("methods")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        return check_unique(v, "method")


TOOLS = [
    ToolSpec(
        name="online_lp_regret",
        description=(
            "Online resource allocation (online LP): run the dual-subgradient baseline, the "
            "decoupled explore→exploit method and the concurrent variant on the same random "
            "arrivals; report regret against the hindsight LP optimum (HiGHS), leftover budget "
            "and dual-price errors per method."
        ),
        args_model=OnlineLpArgs,
        module="methods.online_lp",
        run="methods.online_lp.run:run_tool",
    )
]
