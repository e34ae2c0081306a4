"""How a node did, from what its steps observed (pure), and whether another node fits the budget.

One function settles a node live and on resume alike (the trace keeps the same observations),
so a resumed search sees exactly the tree the first session saw.
"""

from __future__ import annotations

from pydantic import BaseModel

from agent.baseline import read_metric
from agent.tree.nodes import Node
from environments.record.runs import Budgets, RunMeta, Totals

ERROR_CHARS = 2000   # of a failed run's output kept for the debug prompt (the end: the traceback)
OUTPUT_CHARS = 1500  # of a good run's output kept for the improve prompt


def settle(node: Node, *, failed: bool, output: str, metric_name: str,
           validation: dict | None = None, source: str = "validation") -> Node:
    """``node`` with its status, metric and excerpts filled in.

    ``failed``: the write or the run reported an error. ``validation``: the ``data`` of the
    harness's score on the search split (``source="search"``) or of Validate Submission when it
    ran; its value wins over the script's own print, an ``eval_error`` (the outputs were wrong)
    makes the node buggy, an infrastructure failure falls back to the print.
    """
    metric, why = None, ""
    if not failed and validation is not None:
        if validation.get("value") is not None:
            metric = float(validation["value"])
        elif validation.get("failure") not in (None, "infrastructure"):
            what = "Validate Submission" if source == "validation" else f"scoring on {source}"
            why = f"\n[{what} failed: {validation.get('failure')}]"
        else:
            source = "output"
    else:
        source = "output"
    if not failed and metric is None and not why:
        found = read_metric(output, metric_name)
        if found is not None:
            metric, source = found, "output"
        else:
            why = f"\n[the output has no line `validation {metric_name}: <number>`]"
    good = not failed and metric is not None
    return node.model_copy(update={
        "status": "good" if good else "buggy",
        "metric": metric if good else None,
        "metric_source": source if good else None,
        "error": "" if good else (output + why)[-ERROR_CHARS:],
        "output": output[-OUTPUT_CHARS:],
    })


class Cost(BaseModel):
    """What some steps use of each budget (a node, or the closing steps)."""

    steps: int = 0
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(steps=self.steps + other.steps, tokens=self.tokens + other.tokens,
                    cost=self.cost + other.cost, seconds=self.seconds + other.seconds)

    def most(self, other: Cost) -> Cost:
        """The larger of each (the costliest node seen so far, budget by budget)."""
        return Cost(steps=max(self.steps, other.steps), tokens=max(self.tokens, other.tokens),
                    cost=max(self.cost, other.cost), seconds=max(self.seconds, other.seconds))


def used(meta: RunMeta) -> Cost:
    t = meta.totals
    return Cost(steps=t.steps, tokens=t.tokens_in + t.tokens_out, cost=t.cost, seconds=t.seconds)


def fits(meta: RunMeta, node: Cost, closing: Cost) -> bool:
    """Whether one more node and then the closing steps end inside the run's budgets.

    Asks the runner's own :meth:`Budgets.exhausted` about the totals projected to the moment
    each would be checked: before the Final Answer (all the steps but it taken), and, for
    tokens and cost, before the node's second step (its model call already counted). So the
    agent never keeps a second set of limits; it only looks ahead with the runner's.
    """
    limits = meta.budgets
    budgets = limits if isinstance(limits, Budgets) else Budgets.model_validate(limits or {})
    now = used(meta)
    after = now + node + closing
    projected = Totals(steps=max(0, after.steps - 1),  # the Final Answer is proposed with one left
                       tokens_in=after.tokens, cost=after.cost, seconds=after.seconds)
    return budgets.exhausted(projected, after.seconds) is None
