"""Score a workspace's policy.py: mean regret/s over 24 private 'scaled' instances (lower is better).

Eval owns the arrivals, the budgets and the bookkeeping (methods.online_lp.interface). The 24
instances run together, one state row each; then one private row is re-run alone and must
give the same decisions (rows may not share information). A policy that breaks the interface,
couples rows or takes more than 120 s raises, which is recorded as an eval error.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from methods._submission import load_submission  # noqa: E402
from methods.online_lp.instances import make_instance  # noqa: E402
from methods.online_lp.interface import run_policy  # noqa: E402
from methods.online_lp.simulate import Batch  # noqa: E402

TIME_LIMIT_S = 120.0


def get_score(submission_folder: str) -> float:
    private = json.loads((Path(__file__).resolve().parent / "private.json").read_text())
    T, m, base = private["T"], private["m"], private["base_budget"]
    rows = private["instances"]
    instances = [make_instance("scaled", T, m, r["seed"], base) for r in rows]
    opt = np.array([r["offline_opt"] for r in rows])
    scales = np.array([inst.scale_s for inst in instances])

    module = load_submission(submission_folder, "policy.py")
    result = run_policy(module.init, module.decide, Batch.stack(instances), TIME_LIMIT_S)
    probe = private["probe_row"]
    module = load_submission(submission_folder, "policy.py")  # fresh module state for the probe
    alone = run_policy(module.init, module.decide, Batch.stack([instances[probe]]), TIME_LIMIT_S)
    if not np.array_equal(alone.decisions[:, 0], result.decisions[:, probe]):
        raise RuntimeError("rows are not independent: an instance run alone decided differently")
    regret = (opt - result.reward) / scales
    print(f"regret/s per instance: {np.round(regret, 2).tolist()}")
    print(f"policy time {result.policy_seconds + alone.policy_seconds:.1f}s")
    return float(regret.mean())


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
