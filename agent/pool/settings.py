"""The pool's options (``--workers``, ``--address``, ``--selection``, ``--rank-temperature``).

Stored in ``run.json`` under ``config.pool`` like the tree agent's settings under
``config.tree``, so a resumed pool continues with the workers and policy it began with unless
told otherwise; the command-line flags and the TUI's form are generated from these fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PoolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workers: int = Field(2, ge=1, le=256, description="--agent pool: nodes run at once, each by a "
                         "Ray worker in its own sandbox")
    address: str | None = Field(None, description="--agent pool: a Ray cluster to join "
                                "(host:port; default: Ray started in this process)")
    selection: Literal["rank", "greedy"] = Field("rank", description="--agent pool: how parents "
                                                 "are chosen on the search score")
    rank_temperature: float = Field(1.0, gt=0, le=100, description="--agent pool: rank "
                                    "selection's temperature (small: nearly greedy)")
    pool_executor: Literal["ray", "threads"] = Field("ray", description="--agent pool: where "
                                                     "nodes run (threads: in this process, no Ray)")
    drafts: int = Field(3, ge=1, le=100, description="--agent pool: random settings drafted "
                        "before improving (the starting setting is one more)")
    operator_turns: int = Field(2, ge=1, le=10, description="--agent pool with --model: model "
                                "turns of one node's episode (a script that fails is shown to "
                                "the model and run again while turns are left)")
