"""Score features.py: LOCO least-squares MAE (accuracy points) of the source model's accuracy
on the 30 shifted sets, predicted from the workspace's label-free features. Lower is better.

Each private split (``environments/task/splits.py``) is the 30 shifted sets of its own held-out
digits: prepare.py carves the 797 into test 399 (the public data/shifted/), search 199 and select
199 (inputs/<split>/), disjoint and fixed by the task's secret seed.

The trusted phase of the two-phase contract (``environments/submission.py``): ``produce.py``
computed the features in the submission phase; this reads only them. The per-set time limit
is now the sandbox's (``eval_timeout``), measured from outside."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from methods._submission import load_json

HERE = Path(__file__).resolve().parent
WORST = 100.0  # accuracy points: no prediction can be worse than this on average
MAX_FEATURES = 3


def private_file(split: str) -> str:
    """The split's set names, true accuracies, labels and image indices, next to this script."""
    return "private.npz" if split == "test" else f"private_{split}.npz"


def split_members(split: str) -> list[int]:
    """``split``'s held-out digits by their index in scikit-learn's 1,797 (each of its 30 sets
    shifts all of them): no image is in two splits."""
    return [int(i) for i in _private(split)["index"]]


def _private(split: str) -> dict:
    path = HERE / private_file(split)
    if not path.exists():
        sys.path.insert(0, str(HERE))
        import prepare

        prepare.main()
    with np.load(path) as d:
        return {k: d[k] for k in d.files}


def loco_mae(feats: np.ndarray, accs: np.ndarray, kinds: list[str]) -> float:
    """Ordinary least squares with an intercept, leave one corruption kind out; MAE in points."""
    design = np.column_stack([np.ones(len(feats)), feats])
    kinds_arr = np.asarray(kinds)
    errors = np.empty(len(accs))
    for k in dict.fromkeys(kinds):
        test = kinds_arr == k
        coef, *_ = np.linalg.lstsq(design[~test], accs[~test], rcond=None)
        errors[test] = np.abs(design[test] @ coef - accs[test])
    return float(100 * errors.mean())


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    produced = load_json(outputs)
    if "gate" in produced:
        print(f"gate: {produced['gate']}")
        return WORST
    private = _private(split)
    rows = []
    for name in private["names"]:
        feats = np.asarray(produced["features"].get(str(name), []), dtype=float).ravel()
        if not 1 <= len(feats) <= MAX_FEATURES or not np.isfinite(feats).all():
            print(f"gate: {name}: features must be 1-{MAX_FEATURES} finite floats, got {feats}")
            return WORST
        rows.append(feats)
    if len({len(r) for r in rows}) != 1:
        print("gate: every set needs the same number of features")
        return WORST
    kinds = [str(n).rsplit("_", 1)[0] for n in private["names"]]
    value = loco_mae(np.stack(rows), private["accs"], kinds)
    print(f"LOCO MAE {value:.2f} accuracy points over {len(rows)} {split} sets")
    return value
