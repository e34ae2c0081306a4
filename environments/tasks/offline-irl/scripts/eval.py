"""Score a workspace's feasible.classify on 30 private instances: mean R^∩ recall, gated.

The instances (MDP, data, candidate pool, exact labels) are built here from private seeds; the
workspace only ever sees the solver's inputs. Any ∩ false-in or ∪ false-out on any instance, a
malformed output, or more than 60 s in all scores 0: the method is a sanity check that must hold.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from methods._submission import load_submission  # noqa: E402
from methods.offline_irl.instances import SOLVER_KEYS, build_instance  # noqa: E402

PRIVATE_SEEDS = [7_340_011 + 97 * i for i in range(30)]
TIME_LIMIT_S = 60.0
WORST = 0.0


def get_score(submission_folder: str) -> float:
    classify = load_submission(submission_folder, "feasible.py").classify
    recalls, spent = [], 0.0
    for i, seed in enumerate(PRIVATE_SEEDS):
        inst = build_instance(seed)
        K = inst["R"].shape[0]
        visible = {k: np.array(inst[k], copy=True) for k in SOLVER_KEYS}
        start = time.perf_counter()
        out = classify(visible)
        spent += time.perf_counter() - start
        if spent > TIME_LIMIT_S:
            print(f"gate: classify took more than {TIME_LIMIT_S:.0f} s in all")
            return WORST
        try:
            sub, sup = (np.asarray(x) for x in out)
        except (TypeError, ValueError):
            print("gate: classify must return (in_subset, in_superset)")
            return WORST
        if sub.dtype != bool or sup.dtype != bool or sub.shape != (K,) or sup.shape != (K,):
            print(f"gate: outputs must be bool arrays of length {K}")
            return WORST
        true_sub, true_sup = inst["in_subset_true"], inst["in_superset_true"]
        false_in, false_out = int((sub & ~true_sub).sum()), int((true_sup & ~sup).sum())
        if false_in or false_out:
            print(f"gate: instance {i} is unsound ({false_in} subset false-ins, "
                  f"{false_out} superset false-outs)")
            return WORST
        recalls.append(float((sub & true_sub).sum() / max(int(true_sub.sum()), 1)))
    score = float(np.mean(recalls))
    print(f"subset_recall {score:.4f} over {len(recalls)} instances, all sound "
          f"({spent:.1f} s in classify)")
    return score


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
