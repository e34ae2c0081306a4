"""Score features.py: LOCO least-squares MAE (accuracy points) of the source model's accuracy
on the 30 shifted sets, predicted from the workspace's label-free features. Lower is better."""

from __future__ import annotations

import copy
import re
import sys
import time
from pathlib import Path

import numpy as np
import torch

from methods._submission import load_submission

HERE = Path(__file__).resolve().parent
WORST = 100.0  # accuracy points: no prediction can be worse than this on average
MAX_FEATURES, MAX_SECONDS = 3, 10.0
FORBIDDEN = re.compile(r"load_digits|digits\.csv|digits\.rst")


def _private() -> dict:
    path = HERE / "private.npz"
    if not path.exists():
        sys.path.insert(0, str(HERE))
        import prepare

        prepare.main()
    with np.load(path) as d:
        return {k: d[k] for k in d.files}


def _forbidden_reference(folder: Path) -> str | None:
    for py in folder.rglob("*.py"):
        if FORBIDDEN.search(py.read_text(errors="ignore")):
            return str(py.relative_to(folder))
    return None


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


def get_score(submission_folder: str) -> float:
    torch.set_num_threads(1)
    folder = Path(submission_folder).resolve()
    bad = _forbidden_reference(folder)
    if bad:
        print(f"gate: {bad} refers to sklearn's bundled digits")
        return WORST
    private = _private()
    from methods.entropy_enigma.model import DigitsBNMLP

    source = DigitsBNMLP()
    source.load_state_dict(torch.load(folder / "source_model.pt", weights_only=True))
    source.eval()
    module = load_submission(folder, "features.py", name="features")
    rows = []
    for name in private["names"]:
        x = np.load(folder / "data" / "shifted" / f"{name}.npz")["X"]
        start = time.perf_counter()
        feats = module.features(copy.deepcopy(source), x.copy())
        seconds = time.perf_counter() - start
        feats = np.asarray(feats, dtype=float).ravel()
        if not 1 <= len(feats) <= MAX_FEATURES or not np.isfinite(feats).all():
            print(f"gate: {name}: features must be 1-{MAX_FEATURES} finite floats, got {feats}")
            return WORST
        if seconds > MAX_SECONDS:
            print(f"gate: {name}: features took {seconds:.1f} s (limit {MAX_SECONDS:.0f} s)")
            return WORST
        rows.append(feats)
    if len({len(r) for r in rows}) != 1:
        print("gate: every set needs the same number of features")
        return WORST
    kinds = [str(n).split("_")[0] for n in private["names"]]
    score = loco_mae(np.stack(rows), private["accs"], kinds)
    print(f"LOCO MAE {score:.2f} accuracy points over {len(rows)} sets")
    return score


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
