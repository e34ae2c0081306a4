"""Score a bfn-fast-sampling submission: FD at 10 denoiser calls (n = 2000, lower is better).

The denoiser is the exact Bayes denoiser of the digits GMM put through a *secret* orthogonal
transform (a pixel permutation and sign flips). It never shares a process with the submission:
``make_oracle`` answers the submission's ``denoise`` requests in the oracle's own sandbox
(interactive contract, ``environments/submission.py``; the host relays at most 10 of them), and
``score`` computes the FD of the samples the submission wrote against reference samples of the
same transformed mixture. FD is invariant under the transform, so dev numbers carry over, while
a sampler that ignores the denoiser (say, sampling the dev GMM) scores badly.

Three private splits (:data:`SECRET_SEEDS`), each its own secret transform, reference samples
and sampler noise seed (``produce.py: NOISE_SEEDS``): ``score`` on ``test`` (what the task scored
all along), ``search_score`` and ``select_score`` on theirs; the oracle answers with the
transform of the split it is made for (``make_oracle(challenge, split)``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from methods._submission import load_outputs

N, NFE_CAP, D = 2000, 10, 64
_SECRET_SEED = 4_518_803  # test's
SECRET_SEEDS = {"test": _SECRET_SEED, "search": 7_236_911, "select": 2_904_467}
HERE = Path(__file__).resolve().parent


def _gmm():
    from methods.bfn_solver.gmm import GMM, digits_gmm

    path = HERE / "private" / "gmm.npz"
    if path.exists():
        with np.load(path) as f:
            return GMM(f["weights"], f["means"], f["covariances"])
    return digits_gmm()


def split_members(split: str) -> list[str]:
    """A split's measurement: its secret transform's seed and its sampler noise seed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bfn_fast_sampling_produce", HERE / "produce.py")
    produce = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(produce)  # by path: another task's ``produce`` may be imported
    return [f"transform {SECRET_SEEDS[split]}/noise {produce.NOISE_SEEDS[split]}"]


def _secret(split: str = "test"):
    """The transformed mixture and the generator that then draws the reference (one order, so
    the oracle and the scorer agree on every number)."""
    rng = np.random.default_rng(SECRET_SEEDS[split])
    perm, signs = rng.permutation(D), rng.choice([-1.0, 1.0], size=D)
    return _gmm().transformed(perm, signs), rng


def _checked(arrays: dict) -> tuple[np.ndarray, np.ndarray]:
    if set(arrays) != {"mu", "t"}:
        raise ValueError(f"a denoise request carries mu and t, got {sorted(arrays)}")
    mu, t = arrays["mu"].astype(np.float64), arrays["t"].astype(np.float64)
    if mu.shape != (N, D) or not np.isfinite(mu).all():
        raise ValueError(f"mu must be a finite ({N}, {D}) array, got shape {mu.shape}")
    if t.shape not in ((), (N,)) or not np.isfinite(t).all() or (t < 0).any() or (t > 1).any():
        raise ValueError("t must be a scalar or one value per row, in [0, 1]")
    return mu, t


def make_oracle(challenge: str, split: str = "test"):
    """The denoiser the submission questions: ("denoise", {mu, t}) -> {x_hat}, under the secret
    transform of ``split`` (the host passes the split it scores)."""
    from methods.bfn_solver.gmm import GMMOracle

    oracle = GMMOracle(_secret(split)[0])

    def answer(op: str, arrays: dict) -> dict:
        if op != "denoise":
            raise ValueError(f"unknown request {op!r}: the only one is 'denoise'")
        mu, t = _checked(arrays)
        return {"x_hat": oracle(mu, t)}

    return answer


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    from methods.bfn_solver.fd import frechet_distance

    x = load_outputs(outputs)["samples"]
    if x.shape != (N, D) or not np.isfinite(x).all():
        raise ValueError(f"sample() must return a finite ({N}, {D}) array, got shape {x.shape}")
    gmm, rng = _secret(split)
    fd = float(frechet_distance(x.astype(np.float64), gmm.sample(N, rng)))
    print(f"FD {fd:.4f}")
    return fd
