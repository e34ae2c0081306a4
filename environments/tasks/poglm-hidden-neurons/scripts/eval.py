"""Score a poglm-hidden-neurons submission: elbo_gap = mean_X [LL_ref(X) - ELBO_q(X)] (nats).

The generative GLM p is known (the truth). This file draws its own samples from the submitted
posterior (200 Poisson draws per test sequence, through Q.rates, autoregressively if Q says so)
and computes ln p with the true parameters and ln q from the rates it sampled from, so the
bound is honest whatever q reports. LL_ref is an IWAE-5000 estimate of ln p(X) with the
reference FB posterior, precomputed by prepare.py (recomputed here if missing). The data seed
and the test spikes live only in scripts/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from methods._submission import load_submission

_SECRET_SEED = 60217
N_TRAIN, N_TEST, T, N_VIS, N_HID = 60, 20, 100, 3, 2
EVAL_SAMPLES = 200
REF_SAMPLES = 5000
HERE = Path(__file__).resolve().parent


def dataset():
    from methods.poglm.glm import generate

    return generate("strong_drive", N_TRAIN, N_TEST, T, N_VIS, N_HID, seed=_SECRET_SEED)


def reference_ll(ds) -> np.ndarray:
    """IWAE-5000 ln p(X) per test sequence under the reference FB posterior."""
    from methods.poglm.inference import evaluate, fit

    torch.manual_seed(0)
    out = fit(ds.train[..., :N_VIS], N_HID, q_kind="FB", estimator="gs_pathwise", tau=0.5, K=5,
              epochs=15, fixed_params=ds.params, seed=0)
    _, mll = evaluate(ds.params, out.q, ds.test[..., :N_VIS], S=REF_SAMPLES, seed=1)
    return mll.numpy()


def _load_q(folder: Path):
    q = load_submission(folder, "q.py").Q()
    if not (folder / "q.pt").exists():
        raise FileNotFoundError("q.pt is missing (run train.py)")
    q.load_state_dict(torch.load(folder / "q.pt", map_location="cpu", weights_only=True))
    q.eval()
    return q


def _checked(r: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    if not isinstance(r, torch.Tensor) or tuple(r.shape) != shape:
        raise ValueError(f"Q.rates must return a tensor of shape {shape}, got {getattr(r, 'shape', type(r))}")
    r = r.detach().to(torch.float64)
    if not torch.isfinite(r).all() or (r <= 0).any():
        raise ValueError("Q.rates must be positive and finite")
    return r


@torch.no_grad()
def sample_and_score(q, params, x: torch.Tensor, S: int, gen: torch.Generator) -> torch.Tensor:
    """(S, B) log-weights ln p(X, Z) - ln q(Z | X) with Z drawn here from q's rates."""
    from methods.poglm.glm import poisson_logpmf
    from methods.poglm.inference import log_joint_poisson

    B = x.shape[0]
    xs = x.repeat(S, 1, 1)  # (S*B, T, V)
    if getattr(q, "autoregressive", False):
        z = torch.zeros(S * B, T, N_HID, dtype=torch.float64)
        lam = torch.zeros_like(z)
        for t in range(T):
            lam[:, t] = _checked(q.rates(xs, z[:, :t].clone()), (S * B, T, N_HID))[:, t]
            z[:, t] = torch.poisson(lam[:, t], generator=gen)
    else:
        lam = _checked(q.rates(x, None), (B, T, N_HID)).repeat(S, 1, 1)
        z = torch.poisson(lam, generator=gen)
    log_q = poisson_logpmf(z, lam).sum(dim=(-1, -2))
    log_p = log_joint_poisson(params, xs, z)
    return (log_p - log_q).view(S, B)


def get_score(submission_folder: str) -> float:
    torch.set_num_threads(1)
    ds = dataset()
    ll_path = HERE / "private" / "ll_ref.npy"
    ll_ref = np.load(ll_path) if ll_path.exists() else reference_ll(ds)
    q = _load_q(Path(submission_folder).resolve())
    x_test = ds.test[..., :N_VIS]
    lw = sample_and_score(q, ds.params, x_test, EVAL_SAMPLES, torch.Generator().manual_seed(12345))
    elbo = lw.mean(dim=0).numpy()
    if not np.isfinite(elbo).all():
        raise ValueError("the ELBO is not finite (q gives zero probability to a likely hidden train)")
    gap = float(np.mean(ll_ref - elbo))
    print(f"test ELBO {elbo.mean():.3f}, LL_ref {ll_ref.mean():.3f}, elbo_gap {gap:.3f} nats/sequence")
    return gap


if __name__ == "__main__":
    print(get_score(sys.argv[1] if len(sys.argv) > 1 else "."))
