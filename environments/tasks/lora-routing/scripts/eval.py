"""Score route.py: mean MSE over 8 private held-out tasks of the routed forward pass.

Each private split (search, select, test: ``environments/task/splits.py``) is 8 tasks of its own
(2 per family, disjoint private seeds, :func:`task_indices`); test's are the 8 the task
scored before it had splits.

The trusted phase of the two-phase contract (``environments/submission.py``): ``produce.py``
saved route()'s weights for both layers in the submission phase; this recomputes the routed
forward pass from them with the pristine base and experts, and compares with the targets."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from methods._submission import load_outputs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "inputs"))
from routed import forward_layer, load_model  # noqa: E402

WORST = float("inf")
PRIVATE_SEED = 4_242_000
FAMILIES = 4  # build_library's default
HELDOUT_PER_FAMILY = 2
SPLITS = ("test", "search", "select")


def task_indices(split: str) -> range:
    """Family k's held-out tasks of ``split`` are seeds PRIVATE_SEED + 10 k + j for these j:
    test's are j = 0, 1 (the tasks scored before the splits), then search's, then select's."""
    first = SPLITS.index(split) * HELDOUT_PER_FAMILY
    return range(first, first + HELDOUT_PER_FAMILY)


def heldout_file(split: str) -> str:
    """The split's private held-out tasks (inputs and targets), next to this script."""
    return "heldout.pt" if split == "test" else f"heldout_{split}.pt"


def split_members(split: str) -> list[int]:
    """The private task seeds ``split``'s 8 held-out tasks are drawn from."""
    return [PRIVATE_SEED + 10 * k + j for k in range(FAMILIES) for j in task_indices(split)]


def _heldout(split: str) -> list[dict]:
    path = HERE / heldout_file(split)
    if not path.exists():
        sys.path.insert(0, str(HERE))
        import prepare

        prepare.main()
    return torch.load(path, weights_only=True)


def _check(w: object, n: int, e: int, layer: int) -> str | None:
    if not isinstance(w, torch.Tensor) or tuple(w.shape) != (n, e):
        return f"layer {layer}: route must return a ({n}, {e}) tensor"
    if not torch.isfinite(w).all() or (w < -1e-6).any() or (w.sum(dim=1) > 1 + 1e-5).any():
        return f"layer {layer}: weights must be finite, >= 0, with row sums <= 1"
    return None


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    torch.set_num_threads(1)
    heldout = _heldout(split)
    base, A, B = load_model(HERE)
    weights = load_outputs(outputs)
    mses = []
    for i, task in enumerate(heldout):
        x, y = task["x"], task["y"]
        h = x
        with torch.no_grad():
            for layer in range(2):
                w = weights.get(f"w{i}_{layer}")
                w = torch.from_numpy(w).to(h.dtype) if w is not None else None
                problem = _check(w, len(x), A[layer].shape[0], layer)
                if problem:
                    print(f"gate: {problem}")
                    return WORST
                h = forward_layer(base, A, B, h, w, layer)
        mses.append(float(((h - y) ** 2).mean()))
    value = sum(mses) / len(mses)
    print("per-task MSE:", ", ".join(f"{m:.2f}" for m in mses))
    return value
