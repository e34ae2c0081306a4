"""Score route.py: mean MSE over 8 private held-out tasks of the routed forward pass.

The trusted phase of the two-phase contract (``environments/submission.py``): ``produce.py``
saved route()'s weights for both layers in the submission phase; this recomputes the routed
forward pass from them with the pristine base and experts, and compares with the targets."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from methods._submission import load_outputs

sys.path.insert(0, str(Path(__file__).resolve().parent / "inputs"))
from routed import forward_layer, load_model  # noqa: E402

HERE = Path(__file__).resolve().parent
WORST = float("inf")


def _heldout() -> list[dict]:
    path = HERE / "heldout.pt"
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
    torch.set_num_threads(1)
    heldout = _heldout()
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
