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
                                  "script prints, never with Validate Submission")
