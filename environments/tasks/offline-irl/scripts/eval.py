"""Score a workspace's feasible.classify on 30 private instances: mean R^∩ recall, gated.

Each private split (``search``, ``select``, ``test``: ``environments/task/splits.py``) is its own
30 instances, from disjoint private seeds (:data:`SPLIT_SEEDS`); ``test`` is the set the task
scored before it had splits.

The instances (MDP, data, candidate pool, exact labels) are built here from private seeds; the
workspace only ever sees the solver's inputs. Any ∩ false-in or ∪ false-out on any instance, a
malformed output scores 0: the method is a sanity check that must hold. Two phases
(``environments/submission.py``): ``produce.py`` ran classify() on the solver inputs in the
submission phase; this scores its masks. The 60 s limit is now the sandbox's ``eval_timeout``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402

from methods._submission import load_outputs  # noqa: E402
from methods.offline_irl.instances import build_instance  # noqa: E402

N_INSTANCES = 30
#: the private splits: 30 instances each, from consecutive blocks of one private seed sequence
#: (test is the first block, the one the task scored before it had splits)
SPLIT_SEEDS = {split: [7_340_011 + 97 * i for i in range(k * N_INSTANCES, (k + 1) * N_INSTANCES)]
               for k, split in enumerate(("test", "search", "select"))}
PRIVATE_SEEDS = SPLIT_SEEDS["test"]
WORST = 0.0


def split_members(split: str) -> list[int]:
    """The private instance seeds ``split`` is made of."""
    return list(SPLIT_SEEDS[split])


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    masks = load_outputs(outputs)
    recalls = []
    for i, seed in enumerate(SPLIT_SEEDS[split]):
        inst = build_instance(seed)
        K = inst["R"].shape[0]
        sub, sup = masks.get(f"sub{i}"), masks.get(f"sup{i}")
        if sub is None or sup is None or sub.dtype != bool or sup.dtype != bool or (
                sub.shape != (K,) or sup.shape != (K,)):
            print(f"gate: classify must return (in_subset, in_superset), bool arrays of length {K}")
            return WORST
        true_sub, true_sup = inst["in_subset_true"], inst["in_superset_true"]
        false_in, false_out = int((sub & ~true_sub).sum()), int((true_sup & ~sup).sum())
        if false_in or false_out:
            print(f"gate: instance {i} is unsound ({false_in} subset false-ins, "
                  f"{false_out} superset false-outs)")
            return WORST
        recalls.append(float((sub & true_sub).sum() / max(int(true_sub.sum()), 1)))
    value = float(np.mean(recalls))
    print(f"subset_recall {value:.4f} over {len(recalls)} {split} instances, all sound")
    return value
