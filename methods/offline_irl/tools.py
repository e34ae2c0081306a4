"""Tool declaration for the workbench (pydantic only; no numpy at import)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from methods.toolspec import ToolSpec


class FeasibleRewardCheckArgs(BaseModel):
    """Arguments of ``feasible_reward_check``."""

    model_config = ConfigDict(extra="forbid")

    instance: str = Field(
        "generate",
        description='"generate" for the spec\'s random MDP, or an .npz path holding D_E, D_b '
        "(int (n,H,3): s, a, s'), S, A, H and optionally P (H,S,A,S), d0, pi_E (H,S), "
        "pi_b (H,S,A) for ground truth",
    )
    S: int = Field(6, ge=1, le=200, description="states (generate only)")
    A: int = Field(3, ge=1, le=50, description="actions (generate only)")
    horizon: int = Field(4, ge=1, le=100, description="horizon (generate only)")
    n_episodes: int = Field(200, ge=1, le=1_000_000, description="episodes in each of D^E and D^b "
                   "(generate only)")
    d_min: float = Field(0.0, ge=0.0, le=1.0, description="generator: redraw the MDP until the "
                         "expert occupancy is >= d_min at every expert-reachable state")
    rewards: str = Field("pool", description='"pool" (600 candidates + r_true; needs the true '
                         "expert policy) or an .npz path with R (K,H,S,A) in [-1,1]")
    algorithm: Literal["exact", "irlo", "pirlo"] = Field(
        "pirlo", description="exact (needs P), irlo (plug-in) or pirlo (pessimistic)")
    bonus: Literal["hoeffding", "l1"] = Field(
        "hoeffding", description="pirlo confidence set: Hoeffding bonus with a union over "
        "rewards, or a Weissman L1 ball")
    test: Literal["cross", "tight"] | None = Field(
        None, description="pirlo comparison; default cross for hoeffding, tight for l1")
    bonus_scale: float = Field(1.0, ge=0.0, description="multiplies the confidence radius")
    delta: float = Field(0.1, gt=0.0, lt=1.0, description="failure probability")
    seed: int = Field(0, ge=0, description="generator, data and pool seed")
    out: str = Field("feasible.npz", description="where to write in_subset / in_superset")


TOOLS = [
    ToolSpec(
        name="feasible_reward_check",
        description=(
            "Offline inverse RL (Lazzati et al., ICML 2024): decide which candidate rewards lie "
            "in a sound subset and superset of the feasible reward set, from expert and "
            "behaviour trajectories (IRLO plug-in or pessimistic PIRLO); reports set sizes and, "
            "when the true MDP is known, violations and recall."
        ),
        args_model=FeasibleRewardCheckArgs,
        module="methods.offline_irl",
        run="methods.offline_irl.run:feasible_reward_check",
    )
]
