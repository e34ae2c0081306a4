"""Score partition.py: energy distance (V-statistic) between the label proportions of the
clients it simulates for seeds 0..9 (pooled) and those of 2000 private held-out clients."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from methods._submission import load_submission
from methods.fed_mdm.partition import counts_to_proportions, energy_distance, label_proportions

HERE = Path(__file__).resolve().parent
SEEDS = range(10)
MIN_CLIENTS = 25
TIME_LIMIT = 60.0
WORST = float("inf")


def _heldout() -> np.ndarray:
    path = HERE / "heldout_counts.npy"
    if not path.exists():  # private data not built in this copy yet
        sys.path.insert(0, str(HERE))
        import prepare

        prepare.main()
    return np.load(path)


def _check(clients, n: int, seed: int) -> list[np.ndarray] | str:
    if not isinstance(clients, (list, tuple)) or len(clients) < MIN_CLIENTS:
        return f"seed {seed}: need a list of at least {MIN_CLIENTS} clients"
    arrays = []
    for c in clients:
        a = np.asarray(c)
        if a.ndim != 1 or len(a) == 0 or not np.issubdtype(a.dtype, np.integer):
            return f"seed {seed}: every client must be a non-empty list of ints"
        arrays.append(a.astype(np.int64))
    flat = np.concatenate(arrays)
    if flat.min() < 0 or flat.max() >= n:
        return f"seed {seed}: index out of range"
    if len(np.unique(flat)) != len(flat):
        return f"seed {seed}: an index is used twice"
    return arrays


def get_score(submission_folder: str) -> float:
    folder = Path(submission_folder).resolve()
    heldout = _heldout()
    labels = np.load(folder / "data" / "central_labels.npy")  # read-only: laid over by the scorer
    start = time.perf_counter()
    module = load_submission(folder, "partition.py", name="partition")
    props = []
    for seed in SEEDS:
        clients = module.partition(labels.copy(), seed)
        checked = _check(clients, len(labels), seed)
        if isinstance(checked, str):
            print(f"gate: {checked}")
            return WORST
        props.append(label_proportions(checked, labels, heldout.shape[1]))
    seconds = time.perf_counter() - start
    if seconds > TIME_LIMIT:
        print(f"gate: 10 calls took {seconds:.1f} s (limit {TIME_LIMIT:.0f} s)")
        return WORST
    pooled = np.concatenate(props)
    score = energy_distance(pooled, counts_to_proportions(heldout))
    print(f"{len(pooled)} simulated clients in {seconds:.1f} s; energy distance {score:.5f}")
    return score


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
