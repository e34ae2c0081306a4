"""Submission phase of bfn-fast-sampling: the workspace's sampler, questioning the oracle.

Runs in its own sandbox (``environments/submission.py``, interactive contract). The secret
denoiser is not here: every ``denoise(mu, t)`` call is one request over the oracle channel to
``eval.py``'s oracle in another sandbox, which checks it (exact shapes, finite, t in [0, 1]);
the host caps the requests at 10 (``[oracle] max_requests``). The samples go to ``outputs.npz``
and ``eval.py: score`` computes their FD against reference samples it alone can draw. Each
private split (``split.txt``) has its own sampler noise seed (:data:`NOISE_SEEDS`), as it has its
own secret transform and reference samples (eval.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from methods._submission import load_submission, save_outputs, split_of

N, NFE_CAP = 2000, 10
NOISE_SEEDS = {"test": 0, "search": 38_001, "select": 38_002}  # the sampler's rng per split


def produce(workspace: Path, here: Path, out: Path, oracle) -> None:
    sample = load_submission(workspace, "sampler.py").sample

    def denoise(mu, t) -> np.ndarray:
        reply = oracle("denoise", mu=np.asarray(mu, dtype=np.float64),
                       t=np.asarray(t, dtype=np.float64))
        return reply["x_hat"]

    x = np.asarray(sample(denoise, N, NFE_CAP, np.random.default_rng(NOISE_SEEDS[split_of(here)])), dtype=np.float64)
    save_outputs(out, samples=x)
