"""Score an mtgcn-heterophily submission: mean test accuracy over the three graphs.

The graphs are CSBM draws whose seeds live only here; prepare.py writes them (without test
labels) into the workspace, and this file rebuilds the labels from the same seeds. Nothing the
workspace reports is trusted: only submission_{i}.csv (columns node,class) is read.

The three private splits (task.toml [splits]) are disjoint sets of graphs: ``test`` is graphs
0-2 (the seeds the task has always scored), ``search`` and ``select`` two more graphs each,
drawn the same way from new seeds, numbered 3-6 in an order that mixes the two (two, not three:
every graph costs the submission's program a training). Each split's score is the mean
test-node accuracy over its own graphs.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

N_GRAPHS = 3
CSBM = dict(n=1000, classes=4, d=32, avg_degree=10.0, homophily=0.4, mu_norm=1.0, noise_var=0.25)
_SECRET_SEEDS = (73104, 51887, 90425,  # graphs 0-2: test
                 61_283, 47_119, 88_561, 35_977)  # graphs 3-6: search and select
SPLIT_GRAPHS = {"test": (0, 1, 2), "search": (3, 6), "select": (4, 5)}
N_ALL = len(_SECRET_SEEDS)


def split_members(split: str) -> list[int]:
    """The graphs (i of data/graph{i}.npz) ``split`` is made of."""
    return list(SPLIT_GRAPHS[split])


def graph(i: int):
    """The i-th task graph, with every label (private)."""
    from methods.mtgcn.graph import csbm

    return csbm(**CSBM, seed=_SECRET_SEEDS[i])


def _read_submission(path: Path, test_nodes: np.ndarray, n_classes: int) -> dict[int, int] | None:
    if not path.exists():
        print(f"gate: {path.name} is missing")
        return None
    preds: dict[int, int] = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            try:
                preds[int(row["node"])] = int(row["class"])
            except (KeyError, TypeError, ValueError):
                print(f"gate: {path.name} needs integer columns 'node' and 'class'")
                return None
    missing = set(test_nodes.tolist()) - set(preds)
    if missing:
        print(f"gate: {path.name} lacks {len(missing)} test nodes")
        return None
    if any(not 0 <= preds[v] < n_classes for v in test_nodes.tolist()):
        print(f"gate: {path.name} has classes outside 0..{n_classes - 1}")
        return None
    return preds


def get_score(submission_folder: str) -> float:
    return split_score(submission_folder, "test")


def get_search_score(submission_folder: str) -> float:
    return split_score(submission_folder, "search")


def get_select_score(submission_folder: str) -> float:
    return split_score(submission_folder, "select")


def split_score(submission_folder: str, split: str) -> float:
    folder = Path(submission_folder)
    accs = []
    for i in SPLIT_GRAPHS[split]:
        g = graph(i)
        test_nodes = np.flatnonzero(g.test)
        preds = _read_submission(folder / f"submission_{i}.csv", test_nodes, g.num_classes)
        if preds is None:
            return 0.0
        pred = np.array([preds[v] for v in test_nodes])
        accs.append(float((pred == g.y[test_nodes]).mean()))
    print(f"{split} graphs {SPLIT_GRAPHS[split]}: test accuracy per graph: "
          + ", ".join(f"{a:.4f}" for a in accs))
    return float(np.mean(accs))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
