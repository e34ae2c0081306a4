"""Submission phase of vectorization: one ``Conv2DLayer.forward`` on this scoring's batch.

Runs in its own sandboxed process (``environments/submission.py``); the host times the whole
process, interleaved with the pristine env/ (``environments/timing.py``), and ``eval.py``
checks the saved output against its own float64 convolution in another process. The batch and
weights come from this scoring's random challenge, so an answer cannot be precomputed. The
private splits (``split.txt``) draw them from domains of their own (:func:`case_seed`): ``test``
from the challenge itself as always, ``search`` and ``select`` from a hash of
``"<split>:<challenge>"``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from methods._submission import load_submission, save_outputs, split_of

BATCH_SIZE, IMAGE_SIZE, INPUT_CHANNELS, NUM_FILTERS = 16, 32, 3, 8
KERNEL_SIZE, STRIDE, PADDING = 3, 1, 1


def case_key(challenge: str, split: str = "test") -> str:
    """What seeds a scoring's case: the (hex) challenge for test, another split's own domain."""
    return challenge if split == "test" else f"{split}:{challenge}"


def case_seed(challenge: str, split: str = "test") -> int:
    key = case_key(challenge, split)
    return int(key, 16) if split == "test" else int(hashlib.sha256(key.encode()).hexdigest(), 16)


def case(challenge: str, split: str = "test") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernels, biases and the input batch (float32) for one scoring's challenge and split."""
    rng = np.random.default_rng(case_seed(challenge, split))
    kernels = rng.standard_normal((KERNEL_SIZE, KERNEL_SIZE, INPUT_CHANNELS, NUM_FILTERS))
    biases = rng.standard_normal((1, 1, 1, NUM_FILTERS))
    x = rng.standard_normal((BATCH_SIZE, IMAGE_SIZE, IMAGE_SIZE, INPUT_CHANNELS))
    return kernels.astype(np.float32), biases.astype(np.float32), x.astype(np.float32)


def produce(workspace: Path, inputs: Path, out: Path) -> None:
    module = load_submission(workspace, "train.py", name="_labcoat_vectorization")
    if not hasattr(module, "Conv2DLayer"):
        raise ValueError("train.py defines no Conv2DLayer class")
    kernels, biases, x = case((inputs / "challenge.txt").read_text().strip(), split_of(inputs))
    layer = module.Conv2DLayer(INPUT_CHANNELS, NUM_FILTERS, KERNEL_SIZE, STRIDE, PADDING, "relu")
    layer.kernel_matrices, layer.biases = kernels, biases
    save_outputs(out, output=np.asarray(layer.forward(x.copy()), dtype=np.float64))
