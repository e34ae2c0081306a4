"""Parent choice, pure: rank selection on the ``search`` score with a temperature, or greedy.

AIRA₂ chooses parents by rank, not by raw score, so a search is not steered by how far apart
two scores happen to be on one task's scale: the node ranked ``r`` (0 = best) is drawn with
weight ``exp(-r / temperature)``. A small temperature is nearly greedy, a large one nearly
uniform; ``greedy`` always takes the best (ties: the earliest, so a run replays).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def ranked(scores: Sequence[float], higher_is_better: bool) -> list[int]:
    """Indices of ``scores``, best first (a stable sort: ties keep their order)."""
    return sorted(range(len(scores)), key=lambda i: -scores[i] if higher_is_better else scores[i])


def rank_weights(scores: Sequence[float], higher_is_better: bool, temperature: float) -> list[float]:
    """Each score's chance of being drawn (summing to 1), by its rank alone."""
    if not scores:
        return []
    if temperature <= 0:
        raise ValueError("the temperature must be positive")
    weights = [0.0] * len(scores)
    for rank, i in enumerate(ranked(scores, higher_is_better)):
        weights[i] = math.exp(-rank / temperature)
    total = sum(weights)
    return [w / total for w in weights]


def pick(scores: Sequence[float], higher_is_better: bool, rng: random.Random, *,
         temperature: float = 1.0, greedy: bool = False) -> int:
    """The index of the parent drawn from ``scores`` (a non-empty list)."""
    if not scores:
        raise ValueError("no scored node to choose a parent from")
    if greedy:
        return ranked(scores, higher_is_better)[0]
    return rng.choices(range(len(scores)), weights=rank_weights(scores, higher_is_better, temperature))[0]
