"""Score a workspace's distilled.npz: mean test accuracy of 5 students trained on it (higher is better).

The students follow the fixed protocol (PlainMLP, 300 full-batch Adam steps at lr 1e-3, loss
−Σ Y log softmax) with private seeds, and are scored on private held-out images (transformed
like the training images by prepare.py). The three private splits (task.toml [splits]) are
disjoint parts of the 597 held-out images (search 149, select 149, test 299;
private_<split>.npz), each with its own five student seeds; ``get_score`` is test,
``get_search_score`` / ``get_select_score`` the others. Gates (each scores 0 with its reason): no
distilled.npz; X not exactly (10, 64), not finite, or |x| > 10; Y not 10 non-negative rows that
sum to 1; ``load_digits`` in any submitted .py file.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from methods.d3s.students import student_accuracies  # noqa: E402

STUDENT_SEEDS = [7_013, 7_129, 7_253, 7_369, 7_481]  # test's, as always
SPLIT_STUDENT_SEEDS = {
    "search": [8_017, 8_111, 8_219, 8_317, 8_419],
    "select": [9_011, 9_109, 9_203, 9_311, 9_403],
    "test": STUDENT_SEEDS,
}
HERE = Path(__file__).resolve().parent
N_IMAGES = 10
WORST = 0.0


def _gate(folder: Path) -> tuple[torch.Tensor, torch.Tensor] | str:
    for path in folder.rglob("*.py"):
        if "load_digits" in path.read_text(errors="ignore"):
            return f"{path.name} mentions load_digits: the public copy of the data is off limits"
    path = folder / "distilled.npz"
    if not path.exists():
        return "no distilled.npz (run distill.py)"
    with np.load(path) as z:
        if "X" not in z or "Y" not in z:
            return "distilled.npz must hold X and Y"
        X, Y = np.asarray(z["X"], dtype=np.float64), np.asarray(z["Y"], dtype=np.float64)
    if X.shape != (N_IMAGES, 64) or not np.isfinite(X).all() or np.abs(X).max() > 10:
        return f"X must be ({N_IMAGES}, 64), finite, |x| <= 10"
    if Y.shape != (N_IMAGES, 10) or not np.isfinite(Y).all() or Y.min() < 0 or np.abs(Y.sum(1) - 1).max() > 1e-4:
        return f"Y must be ({N_IMAGES}, 10) non-negative rows summing to 1"
    return torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(Y, dtype=torch.float32)


def _held_out(split: str) -> dict[str, np.ndarray]:
    with np.load(HERE / f"private_{split}.npz") as z:
        return {k: z[k] for k in ("X_test", "y_test", "ids")}


def split_members(split: str) -> list[int]:
    """The held-out images (positions among the 597, fixed by prepare.py's seed) of ``split``."""
    return [int(i) for i in _held_out(split)["ids"]]


def get_score(submission_folder: str) -> float:
    return split_score(submission_folder, "test")


def get_search_score(submission_folder: str) -> float:
    return split_score(submission_folder, "search")


def get_select_score(submission_folder: str) -> float:
    return split_score(submission_folder, "select")


def split_score(submission_folder: str, split: str) -> float:
    torch.set_num_threads(1)
    gated = _gate(Path(submission_folder).resolve())
    if isinstance(gated, str):
        print(f"gate: {gated}")
        return WORST
    X, Y = gated
    held_out = _held_out(split)
    X_test, y_test = torch.from_numpy(held_out["X_test"]), torch.from_numpy(held_out["y_test"])
    accs, _ = student_accuracies(X, Y, X_test, y_test, SPLIT_STUDENT_SEEDS[split])
    print(f"student {split} accuracies: {[round(a, 4) for a in accs]}")
    return float(sum(accs) / len(accs))


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
