"""Score a bfn-fast-sampling submission: FD at 10 denoiser calls (n = 2000, lower is better).

The denoiser is the exact Bayes denoiser of the digits GMM put through a *secret* orthogonal
transform (a pixel permutation and sign flips). It lives in a separate process, forked before
the submission is imported; the sampler only gets an opaque callable that forwards (mu, t) over a
pipe, at most 10 times, each with exactly n rows. The reference samples are drawn, and the FD
computed, in that process too. FD is invariant under the transform, so dev numbers carry over,
while a sampler that ignores the denoiser (say, sampling the dev GMM) scores badly.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
from pathlib import Path

import numpy as np

from methods._submission import load_submission

N, NFE_CAP, D = 2000, 10, 64
_SECRET_SEED = 4_518_803
HERE = Path(__file__).resolve().parent


def _gmm():
    from methods.bfn_solver.gmm import GMM, digits_gmm

    path = HERE / "private" / "gmm.npz"
    if path.exists():
        with np.load(path) as f:
            return GMM(f["weights"], f["means"], f["covariances"])
    return digits_gmm()


def _serve(conn) -> None:
    """The denoiser process: answers ("denoise", mu, t) and ("fd", x), then ("stop",)."""
    from methods.bfn_solver.fd import frechet_distance
    from methods.bfn_solver.gmm import GMMOracle

    rng = np.random.default_rng(_SECRET_SEED)
    perm, signs = rng.permutation(D), rng.choice([-1.0, 1.0], size=D)
    gmm = _gmm().transformed(perm, signs)
    oracle = GMMOracle(gmm)
    reference = gmm.sample(N, rng)
    while True:
        msg = conn.recv()
        if msg[0] == "denoise":
            conn.send(oracle(msg[1], msg[2]))
        elif msg[0] == "fd":
            conn.send(frechet_distance(msg[1], reference))
        else:
            break


class Denoiser:
    """The callable the sampler gets: checks every call and forwards it to the denoiser process."""

    def __init__(self, conn) -> None:
        self._conn = conn
        self.calls = 0

    def __call__(self, mu, t) -> np.ndarray:
        self.calls += 1
        if self.calls > NFE_CAP:
            raise RuntimeError(f"more than {NFE_CAP} denoiser calls")
        mu = np.asarray(mu, dtype=np.float64)
        if mu.shape != (N, D) or not np.isfinite(mu).all():
            raise ValueError(f"mu must be a finite ({N}, {D}) array, got shape {mu.shape}")
        t = np.asarray(t, dtype=np.float64)
        if t.shape not in ((), (N,)) or not np.isfinite(t).all() or (t < 0).any() or (t > 1).any():
            raise ValueError("t must be a scalar or one value per row, in [0, 1]")
        self._conn.send(("denoise", mu, t))
        return self._conn.recv()


def get_score(submission_folder: str) -> float:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child,), daemon=True)
    proc.start()
    try:
        sample = load_submission(submission_folder, "sampler.py").sample
        denoise = Denoiser(parent)
        x = np.asarray(sample(denoise, N, NFE_CAP, np.random.default_rng(0)), dtype=np.float64)
        if x.shape != (N, D) or not np.isfinite(x).all():
            raise ValueError(f"sample() must return a finite ({N}, {D}) array, got shape {x.shape}")
        parent.send(("fd", x))
        fd = float(parent.recv())
        print(f"FD {fd:.4f} with {denoise.calls} denoiser calls")
        return fd
    finally:
        parent.send(("stop",))
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
