"""The tree agent's settings, apart from the agent so that :mod:`agent.config` can hold them
typed (and generate their flags and setup-form rows) without importing the environment."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent.tree.policy import PolicySettings


class TreeSettings(BaseModel):
    """How the solution tree grows (``policy``) and how a node's metric is read. Re-asks of a
    reply with no script are the context's ``format_retries``: one option for one meaning."""

    model_config = ConfigDict(extra="forbid")

    policy: PolicySettings = Field(default_factory=PolicySettings)
    skip_validation: bool = Field(False, description="score nodes only by the metric their "
                                  "script prints, never on the hidden search split nor with "
                                  "Validate Submission")
    select_top_k: int = Field(3, ge=1, le=20, description="the best nodes on search that are "
                              "scored on the hidden select split for the final pick")
