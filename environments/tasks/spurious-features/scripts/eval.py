"""Score a workspace's train.py: 1 − mean worst-group accuracy over 5 private runs (lower is better).

Each run has private seeds and a private coordinate permutation. Eval builds the biased stream
(budget 512,000 samples), the 500-sample balanced set and 4000 balanced test samples, calls
train(stream, balanced, seed), copies the returned weights into the fixed Net and scores the
worst of the four (label, spurious) groups, whose spurious labels only eval sees. A run that
exceeds the budget or 60 s of CPU scores 0 worst-group accuracy; a net whose weights do not fit
the fixed architecture raises.

The metric is the worst-group *error*, 1 − mean WGA: labcoat's improvement is relative, and a
relative gain over an ERM baseline WGA near 0 means nothing. task.toml sets the threshold so that
success is an absolute WGA gain of +0.25.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from methods._submission import load_submission  # noqa: E402
from methods.spurious_boolean.metrics import evaluate  # noqa: E402
from methods.spurious_boolean.model import Net  # noqa: E402
from methods.spurious_boolean.stream import (  # noqa: E402
    BudgetExceeded,
    Stream,
    balanced_batch,
    permutation_from_seed,
)

# (train seed, stream seed, balanced seed, test seed, permutation seed)
PRIVATE = [(31 + i, 7_001 + 17 * i, 8_003 + 19 * i, 9_011 + 23 * i, 6_007 + 29 * i) for i in range(5)]
N_BALANCED, N_TEST = 500, 4000
TIME_LIMIT_S = 60.0


def worst_group_acc(train, seed: int, stream_seed: int, bal_seed: int, test_seed: int,
                    perm_seed: int) -> float:
    perm = permutation_from_seed(perm_seed)
    stream = Stream(stream_seed, perm)
    bal = balanced_batch(bal_seed, perm, N_BALANCED)
    test = balanced_batch(test_seed, perm, N_TEST)
    start = time.process_time()
    try:
        net = train(stream, (bal.x.clone(), bal.y.clone()), seed)
    except BudgetExceeded as err:
        print(f"gate: {err}")
        return 0.0
    if time.process_time() - start > TIME_LIMIT_S:
        print(f"gate: train took more than {TIME_LIMIT_S:.0f} s of CPU")
        return 0.0
    scored = Net()
    scored.load_state_dict(net.state_dict())  # raises unless the architecture is the fixed one
    with torch.no_grad():
        stats = evaluate(scored(test.x), test)
    print(f"run seed {seed}: worst-group acc {stats['worst_group_acc']:.3f}, "
          f"avg acc {stats['avg_acc']:.3f}")
    return float(stats["worst_group_acc"])


def get_score(submission_folder: str) -> float:
    torch.set_num_threads(1)
    train = load_submission(submission_folder, "train.py").train
    wgas = [worst_group_acc(train, *run) for run in PRIVATE]
    mean = sum(wgas) / len(wgas)
    print(f"mean worst-group accuracy {mean:.4f}")
    return 1.0 - mean


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
