"""Submission phase of federated-partition: the workspace's partition() for one split's 10 seeds
(0..9 for test; the split ``split.txt`` names).

Runs in its own sandboxed process (``environments/submission.py``); it sees the public
central labels only. The client index lists go to ``outputs.json``; ``eval.py`` checks them and
computes the energy distance against the private held-out clients in another process.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from methods._submission import load_submission, save_json, split_of

#: partition()'s seeds per private split (eval.py's SPLIT_SEEDS: eval.py is not in this phase)
SPLIT_SEEDS = {"test": range(10), "search": range(10, 20), "select": range(20, 30)}


def produce(workspace: Path, here: Path, out: Path) -> None:
    labels = np.load(workspace / "data" / "central_labels.npy")  # read-only: laid over
    start = time.perf_counter()
    module = load_submission(workspace, "partition.py", name="partition")
    clients = {}
    for seed in SPLIT_SEEDS[split_of(here)]:
        result = module.partition(labels.copy(), seed)
        clients[str(seed)] = [np.asarray(c).tolist() for c in result]
    save_json(out, {"clients": clients, "seconds": time.perf_counter() - start})
