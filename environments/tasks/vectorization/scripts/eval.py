"""Score a vectorization workspace: the runtime of ``Conv2DLayer.forward``, in seconds.

This file imports the workspace's ``train.py`` itself, builds a ``Conv2DLayer`` with weights of
its own, and times ``forward`` on inputs of its own (a fresh batch for every repeat, so an
implementation cannot cache answers). Every output is checked against an independent
computation; a wrong output raises ``ValueError`` with the reason. The score is the best
(lowest) of a few timed repeats. Nothing the workspace prints or writes is trusted.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

MODULE_FILE = "train.py"
BATCH_SIZE = 16
IMAGE_SIZE = 32
INPUT_CHANNELS = 3
NUM_FILTERS = 8
KERNEL_SIZE = 3
STRIDE = 1
PADDING = 1
REPEATS = 3
TIME_BUDGET = 20.0  # seconds of timed forward passes after which no further repeat starts
SEED = 7_654_321
RTOL, ATOL = 1e-3, 1e-3


def _load_module(folder: Path):
    path = folder / MODULE_FILE
    if not path.exists():
        raise ValueError(f"{MODULE_FILE} not found in the workspace {folder}")
    name = f"_labcoat_vectorization_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    if not hasattr(module, "Conv2DLayer"):
        raise ValueError(f"{MODULE_FILE} defines no Conv2DLayer class")
    return module


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


def get_score(submission_folder: str = ".") -> float:
    folder = Path(submission_folder).resolve()
    module = _load_module(folder)
    rng = np.random.default_rng(SEED)
    layer = module.Conv2DLayer(
        INPUT_CHANNELS, NUM_FILTERS, KERNEL_SIZE, STRIDE, PADDING, "relu"
    )
    kernels = rng.standard_normal((KERNEL_SIZE, KERNEL_SIZE, INPUT_CHANNELS, NUM_FILTERS))
    biases = rng.standard_normal((1, 1, 1, NUM_FILTERS))
    layer.kernel_matrices = kernels.astype(np.float32)
    layer.biases = biases.astype(np.float32)

    times: list[float] = []
    for repeat in range(REPEATS):
        x = rng.standard_normal((BATCH_SIZE, IMAGE_SIZE, IMAGE_SIZE, INPUT_CHANNELS))
        x = x.astype(np.float32)
        expected = reference_forward(x, layer.kernel_matrices, layer.biases)
        start = time.perf_counter()
        out = layer.forward(x.copy())
        elapsed = time.perf_counter() - start
        out = np.asarray(out)
        if out.shape != expected.shape:
            raise ValueError(
                f"wrong output: Conv2DLayer.forward returned shape {out.shape}, "
                f"expected {expected.shape}"
            )
        if not np.allclose(out, expected, rtol=RTOL, atol=ATOL):
            worst = float(np.max(np.abs(out - expected)))
            raise ValueError(
                f"wrong output on repeat {repeat}: Conv2DLayer.forward differs from the "
                f"reference convolution by up to {worst:.3g} (allowed rtol={RTOL}, atol={ATOL})"
            )
        times.append(elapsed)
        if sum(times) > TIME_BUDGET:
            break
    best = min(times)
    print(f"forward pass of {BATCH_SIZE} images: best {best:.5f} s over {len(times)} repeats")
    return best


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
