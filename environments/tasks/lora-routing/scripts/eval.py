"""Score route.py: mean MSE over 8 private held-out tasks of the routed forward pass."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

from methods._submission import load_submission

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


def get_score(submission_folder: str) -> float:
    torch.set_num_threads(1)
    folder = Path(submission_folder).resolve()
    heldout = _heldout()
    base = nn.ModuleList([nn.Linear(32, 64), nn.Linear(64, 8)])
    base.load_state_dict(torch.load(folder / "base.pt", weights_only=True))
    base.requires_grad_(False)
    experts = torch.load(folder / "experts.pt", weights_only=True)
    A, B = experts["A"], experts["B"]
    module = load_submission(folder, "route.py", name="route")
    mses = []
    for task in heldout:
        x, y = task["x"], task["y"]
        h = x
        with torch.no_grad():
            for layer in range(2):
                w = module.route(x.clone(), h.clone(), layer)
                if isinstance(w, torch.Tensor):
                    w = w.detach().to(h.dtype)
                problem = _check(w, len(x), A[layer].shape[0], layer)
                if problem:
                    print(f"gate: {problem}")
                    return WORST
                low = torch.einsum("ni,eir->ner", h, A[layer])
                out = base[layer](h) + torch.einsum("ne,ner,ero->no", w, low, B[layer])
                h = torch.tanh(out) if layer == 0 else out
        mses.append(float(((h - y) ** 2).mean()))
    score = sum(mses) / len(mses)
    print("per-task MSE:", ", ".join(f"{m:.2f}" for m in mses))
    return score


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
