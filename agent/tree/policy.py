"""The search policy, pure: which operation comes next, given the journal (AIDE's greedy one).

AIDE's rule (its ``search_policy``; defaults ``num_drafts=5``, ``debug_prob=0.5``,
``max_debug_depth=3``): draft until the drafting quota is met; then, with probability
``debug_prob``, debug a buggy leaf whose line of fixes is not yet too deep; else improve the
best good node; with no good node at all, draft again. Randomness comes from a seeded
``random.Random``, so a run's choices replay from its seed.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field

from agent.tree.nodes import Journal, NodeKind


class PolicySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    num_drafts: int = Field(5, ge=1, description="drafts written before any debug or improvement")
    debug_prob: float = Field(0.5, ge=0.0, le=1.0, description="chance of debugging when a buggy leaf can be")
    max_debug_depth: int = Field(3, ge=0, description="debug nodes in a row a line of fixes may reach")


class Operation(BaseModel):
    """What the next node is: its kind and, except for a draft, the node it starts from."""

    kind: NodeKind
    parent: int | None = None


class GreedyPolicy:
    def __init__(self, settings: PolicySettings | None = None, seed: int = 0) -> None:
        self.settings = settings or PolicySettings()
        self.rng = random.Random(seed)

    def debuggable(self, journal: Journal) -> list[int]:
        """Buggy leaves whose line of fixes may still grow: a line holds at most
        ``max_debug_depth`` debug nodes in a row (AIDE tests ``depth <= max`` and so allows one
        more; here the setting means what its name says)."""
        limit = self.settings.max_debug_depth
        return [n.id for n in journal.buggy
                if journal.is_leaf(n.id) and journal.debug_depth(n.id) < limit]

    def next(self, journal: Journal) -> Operation:
        if len(journal.drafts) < self.settings.num_drafts:
            return Operation(kind="draft")
        candidates = self.debuggable(journal)
        # the draw is made every time, so a run's sequence of choices does not depend on
        # whether a buggy leaf happened to exist
        if self.rng.random() < self.settings.debug_prob and candidates:
            return Operation(kind="debug", parent=self.rng.choice(candidates))
        best = journal.best()
        if best is None:
            return Operation(kind="draft")
        return Operation(kind="improve", parent=best.id)
