"""Check a vectorization submission's output; the runtime is measured by the host.

``produce.py`` ran the workspace's ``Conv2DLayer.forward`` in the submission phase; the host
timed that whole process against the pristine env/, interleaved (``environments/timing.py``).
Here, in the trusted phase, the saved output is compared with an independent float64
convolution of the same challenge's batch; a wrong output raises ``ValueError`` with the reason.
``score`` returns the amount of work per run (one forward pass), which the host divides by;
``search_score`` and ``select_score`` check the same on their split's batch (``produce.py:
case_key``: disjoint domains of the scoring's challenge).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from methods._submission import load_outputs


def _produce_module():
    """produce.py beside this file, by path (another task's ``produce`` may be imported)."""
    spec = importlib.util.spec_from_file_location(
        "vectorization_produce", Path(__file__).resolve().parent / "produce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_produce = _produce_module()
PADDING, STRIDE, case, case_key = _produce.PADDING, _produce.STRIDE, _produce.case, _produce.case_key

RTOL, ATOL = 1e-3, 1e-3


def reference_forward(x: np.ndarray, kernels: np.ndarray, biases: np.ndarray) -> np.ndarray:
    """The same convolution computed independently, in float64, as a sum over kernel offsets."""
    n, h, w, _ = x.shape
    k = kernels.shape[0]
    p, s = PADDING, STRIDE
    padded = np.pad(x.astype(np.float64), ((0, 0), (p, p), (p, p), (0, 0)))
    h_out = (h + 2 * p - k) // s + 1
    w_out = (w + 2 * p - k) // s + 1
    out = np.zeros((n, h_out, w_out, kernels.shape[3]))
    for di in range(k):
        for dj in range(k):
            patch = padded[:, di : di + s * (h_out - 1) + 1 : s, dj : dj + s * (w_out - 1) + 1 : s]
            out += patch @ kernels[di, dj].astype(np.float64)
    out += biases.reshape(1, 1, 1, -1)
    return np.maximum(out, 0.0)


def split_members(split: str) -> list[str]:
    """What a split's batch and weights are drawn from, for a scoring's challenge."""
    return [case_key("<challenge>", split)]


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    folder = Path(outputs)
    kernels, biases, x = case((folder / "challenge.txt").read_text().strip(), split)
    out = load_outputs(folder)["output"]
    expected = reference_forward(x, kernels, biases)
    if out.shape != expected.shape:
        raise ValueError(f"wrong output: Conv2DLayer.forward returned shape {out.shape}, "
                         f"expected {expected.shape}")
    if not np.allclose(out, expected, rtol=RTOL, atol=ATOL):
        worst = float(np.max(np.abs(out - expected)))
        raise ValueError(f"wrong output: Conv2DLayer.forward differs from the reference "
                         f"convolution by up to {worst:.3g} (allowed rtol={RTOL}, atol={ATOL})")
    return 1.0
