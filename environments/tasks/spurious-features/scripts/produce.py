"""Submission phase of spurious-features: the workspace's train() on the 5 private runs.

Each private split has 5 runs of its own (:data:`SPLIT_RUNS`: test's are the runs scored all
along); this trains on the split named by ``split.txt``.

Runs in its own sandboxed process (``environments/submission.py``). It builds each run's biased
stream and balanced set (never the test set, whose seeds only ``eval.py`` holds), calls
train(stream, balanced, seed) and saves the returned weights; ``eval.py`` loads them into the
fixed Net and scores the worst group in another process.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from methods._submission import load_submission, save_json, save_outputs, split_of  # noqa: E402
from methods.spurious_boolean.stream import (  # noqa: E402
    BudgetExceeded,
    Stream,
    balanced_batch,
    permutation_from_seed,
)

# (train seed, stream seed, balanced seed, permutation seed); eval.py adds the test seeds
RUNS = [(31 + i, 7_001 + 17 * i, 8_003 + 19 * i, 6_007 + 29 * i) for i in range(5)]
SPLIT_RUNS = {"test": RUNS,
              "search": [(41 + i, 7_301 + 17 * i, 8_303 + 19 * i, 6_307 + 29 * i) for i in range(5)],
              "select": [(51 + i, 7_601 + 17 * i, 8_603 + 19 * i, 6_607 + 29 * i) for i in range(5)]}
N_BALANCED = 500


def produce(workspace: Path, here: Path, out: Path) -> None:
    torch.set_num_threads(1)
    train = load_submission(workspace, "train.py").train
    gates = {}
    for i, (seed, stream_seed, bal_seed, perm_seed) in enumerate(SPLIT_RUNS[split_of(here)]):
        perm = permutation_from_seed(perm_seed)
        bal = balanced_batch(bal_seed, perm, N_BALANCED)
        try:
            net = train(Stream(stream_seed, perm), (bal.x.clone(), bal.y.clone()), seed)
        except BudgetExceeded as err:
            gates[str(i)] = str(err)
            continue
        save_outputs(out, name=f"run{i}", **net.state_dict())
    save_json(out, {"gates": gates})
