"""The data interface train() gets, and a dev version of it (public permutations and seeds).

- ``stream(n) -> (x, y)``: n fresh training samples; x is float32 (n, 20) in {-1, +1}, y in
  {-1, +1}. The label is a function of some "core" coordinates; a simpler function of some
  other, "spurious" coordinates agrees with it 95% of the time in this stream. Coordinates are
  shuffled by a permutation you are not told. Budget: 512,000 samples per run (8000 x 64); asking
  for more raises.
- ``balanced = (x, y)``: 500 labelled samples where the spurious function agrees with the label
  only 50% of the time. No group labels.
Eval scores worst-group accuracy over the four (label, spurious) groups on balanced test data.
"""

from methods.spurious_boolean.stream import (
    BUDGET,
    BudgetExceeded,
    Stream,
    balanced_batch,
    permutation_from_seed,
)

DEV_RUNS = [  # (train seed, stream seed, balanced seed, test seed, permutation seed), all public
    (0, 100, 200, 300, 400),
    (1, 101, 201, 301, 401),
]
N_BALANCED, N_TEST = 500, 4000

__all__ = [
    "BUDGET",
    "DEV_RUNS",
    "N_BALANCED",
    "N_TEST",
    "BudgetExceeded",
    "Stream",
    "balanced_batch",
    "permutation_from_seed",
]
