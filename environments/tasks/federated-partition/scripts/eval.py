"""Score partition.py: energy distance (V-statistic) between the label proportions of the
clients it simulates for seeds 0..9 (pooled) and those of 2000 private held-out clients.

The trusted phase of the two-phase contract (``environments/submission.py``): ``produce.py``
ran partition() in the submission phase; this reads only its client lists. The time limit is
now the sandbox's (``eval_timeout``), measured from outside."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from methods._submission import load_json
from methods.fed_mdm.partition import counts_to_proportions, energy_distance, label_proportions

HERE = Path(__file__).resolve().parent
SEEDS = range(10)
MIN_CLIENTS = 25
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


def score(outputs: str) -> float:
    heldout = _heldout()
    from sklearn.datasets import load_digits

    labels = load_digits().target.astype(np.int64)  # what prepare.py wrote to env/data
    produced = load_json(outputs)
    props = []
    for seed in SEEDS:
        clients = produced["clients"].get(str(seed))
        if isinstance(clients, list):
            clients = [np.asarray(c) if isinstance(c, list) and all(isinstance(i, int) for i in c)
                       else np.asarray([0.5]) for c in clients]
        checked = _check(clients, len(labels), seed)
        if isinstance(checked, str):
            print(f"gate: {checked}")
            return WORST
        props.append(label_proportions(checked, labels, heldout.shape[1]))
    pooled = np.concatenate(props)
    value = energy_distance(pooled, counts_to_proportions(heldout))
    print(f"{len(pooled)} simulated clients; energy distance {value:.5f}")
    return value
