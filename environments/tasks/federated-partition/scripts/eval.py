"""Score partition.py: energy distance (V-statistic) between the label proportions of the
clients it simulates for seeds 0..9 (pooled) and those of 2000 private held-out clients.

Each private split (``environments/task/splits.py``) has its own 10 seeds and its own 2000
held-out clients from the same hidden population (:data:`SPLIT_SEEDS`, :func:`split_members`);
test's are the ones the task scored before it had splits.

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
#: partition()'s seeds per private split; test's are the 10 scored before the splits
SPLIT_SEEDS = {"test": range(10), "search": range(10, 20), "select": range(20, 30)}
SEEDS = SPLIT_SEEDS["test"]
N_HELDOUT = 2_000
MIN_CLIENTS = 25
WORST = float("inf")


def heldout_file(split: str) -> str:
    """The split's private held-out clients' label counts, next to this script."""
    return "heldout_counts.npy" if split == "test" else f"heldout_{split}_counts.npy"


def split_members(split: str) -> list[str]:
    """partition()'s seeds for ``split`` and its held-out clients, numbered in the order
    prepare.py draws them: test's are the population's first 2000, search's and select's the
    2 x 2000 drawn after the population's 20,000."""
    first = {"test": 0, "search": 20_000, "select": 22_000}[split]
    return ([f"seed {s}" for s in SPLIT_SEEDS[split]]
            + [f"client {i}" for i in range(first, first + N_HELDOUT)])


def _heldout(split: str) -> np.ndarray:
    path = HERE / heldout_file(split)
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
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    heldout = _heldout(split)
    from sklearn.datasets import load_digits

    labels = load_digits().target.astype(np.int64)  # what prepare.py wrote to env/data
    produced = load_json(outputs)
    props = []
    for seed in SPLIT_SEEDS[split]:
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
