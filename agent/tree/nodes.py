"""The solution tree as pure data: nodes (one complete solve script each) and the journal.

Kept free of I/O so the search policy and its tests work on plain values; the actor
(:mod:`agent.tree.agent`) fills nodes in from the environment's observations and can rebuild
the whole journal from a run's trace on resume (every node's steps carry its id in their meta).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

NodeKind = Literal["draft", "improve", "debug"]
NodeStatus = Literal["pending", "good", "buggy"]


class Node(BaseModel):
    """One candidate solution: the whole solve script, how it came about, and how it did."""

    id: int = Field(ge=1)
    parent: int | None = None
    kind: NodeKind
    code: str
    plan: str = ""
    metric: float | None = None
    metric_source: Literal["search", "validation", "output"] | None = None
    select: float | None = Field(None, description="its score on the hidden select split, when "
                                 "it was among the candidates the final pick was made from")
    status: NodeStatus = "pending"
    error: str = Field("", description="the end of a buggy run's output: what a debug prompt shows")
    output: str = Field("", description="the run's output, cut (what an improve prompt shows)")
    seconds: float = 0.0
    step: int | None = Field(None, description="the step whose snapshot holds the node's script and "
                             "outputs (its run): what the closing steps restore")


class Journal(BaseModel):
    """Every node so far, in creation order; ``higher_is_better`` orders the metric."""

    higher_is_better: bool = True
    nodes: list[Node] = Field(default_factory=list)
    reserved: int = Field(0, ge=0, description="ids already given out in the trace (a node whose "
                          "run was never recorded keeps its id, so ids stay unique in the trace)")

    def get(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(f"no node {node_id}")

    def next_id(self) -> int:
        return max([self.reserved, *(n.id for n in self.nodes)]) + 1

    def add(self, node: Node) -> Node:
        if any(n.id == node.id for n in self.nodes):
            raise ValueError(f"node {node.id} already exists")
        if node.parent is not None:
            self.get(node.parent)  # a parent must exist: KeyError otherwise
        self.nodes.append(node)
        return node

    @property
    def drafts(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "draft"]

    @property
    def good(self) -> list[Node]:
        return [n for n in self.nodes if n.status == "good"]

    @property
    def buggy(self) -> list[Node]:
        return [n for n in self.nodes if n.status == "buggy"]

    def children(self, node_id: int) -> list[Node]:
        return [n for n in self.nodes if n.parent == node_id]

    def is_leaf(self, node_id: int) -> bool:
        return not self.children(node_id)

    def debug_depth(self, node_id: int) -> int:
        """How many debug nodes in a row end at this node (0 for a draft or an improvement):
        AIDE stops debugging a line of fixes past its maximum depth."""
        depth, node = 0, self.get(node_id)
        while node.kind == "debug":
            depth += 1
            if node.parent is None:
                break
            node = self.get(node.parent)
        return depth

    def best(self) -> Node | None:
        """The good node with the best metric (the earliest among equals)."""
        sign = 1 if self.higher_is_better else -1
        good = [n for n in self.good if n.metric is not None]
        return max(good, key=lambda n: (sign * n.metric, -n.id), default=None)

    def top(self, k: int) -> list[Node]:
        """The ``k`` good nodes with the best metric, best first (the earliest among equals)."""
        sign = 1 if self.higher_is_better else -1
        good = [n for n in self.good if n.metric is not None]
        return sorted(good, key=lambda n: (-sign * n.metric, n.id))[:k]

    def chosen(self) -> Node | None:
        """The run's final node: the best on the select split among the nodes scored on it
        (its search metric, then the earliest, breaking ties); without any, the best on the
        search metric. Picking on the signal the search climbed would reward its noise."""
        sign = 1 if self.higher_is_better else -1
        scored = [n for n in self.good if n.select is not None and n.metric is not None]
        if not scored:
            return self.best()
        return max(scored, key=lambda n: (sign * n.select, sign * n.metric, -n.id))
