"""Score a poglm-hidden-neurons submission: elbo_gap = mean_X [LL_ref(X) - ELBO_q(X)] (nats).

The generative GLM p is known (the truth). This file draws its own samples from the submitted
posterior (200 Poisson draws per test sequence, through Q.rates, autoregressively if Q says so)
and computes ln p with the true parameters and ln q from the rates it sampled from, so the
bound is honest whatever q reports. LL_ref is an IWAE-5000 estimate of ln p(X) with the
reference FB posterior, precomputed by prepare.py (recomputed here if missing). The data seed
and the test spikes live only in scripts/. Each private split (search, select, test:
``environments/task/splits.py``) is 20 held-out sequences of its own from the same GLM
(:data:`SPLIT_SEEDS`); test's are the 20 the task scored before it had splits.

Two phases (``environments/submission.py``): ``produce.py`` evaluates Q's rates in the submission
phase; for a non-autoregressive Q this file draws the hidden spikes itself. An autoregressive
Q's draws are made in the submission phase (each step's rates need the previous draws), so for
it the bound rests on produce.py's sampling: a known limit of this task's split.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from methods._submission import load_outputs

_SECRET_SEED = 60217
N_TRAIN, N_TEST, T, N_VIS, N_HID = 60, 20, 100, 3, 2
EVAL_SAMPLES = 200
REF_SAMPLES = 5000
HERE = Path(__file__).resolve().parent


#: the seed each private split's 20 sequences are drawn with: test's are the last 20 of the
#: dataset's own draw (as before the splits), search's and select's fresh draws from the same GLM
SPLIT_SEEDS = {"test": _SECRET_SEED, "search": _SECRET_SEED + 1, "select": _SECRET_SEED + 2}


def dataset():
    from methods.poglm.glm import generate

    return generate("strong_drive", N_TRAIN, N_TEST, T, N_VIS, N_HID, seed=_SECRET_SEED)


def visible(ds, split: str) -> torch.Tensor:
    """The visible spikes (N_TEST, T, N_VIS) of ``split``'s held-out sequences."""
    from methods.poglm.glm import simulate

    if split == "test":
        return ds.test[..., :N_VIS]
    return simulate(ds.params, N_TEST, T, torch.Generator().manual_seed(SPLIT_SEEDS[split]))[..., :N_VIS]


def split_members(split: str) -> list[str]:
    """``split``'s held-out sequences as "draw seed:index in that draw"."""
    first = N_TRAIN if split == "test" else 0
    return [f"{SPLIT_SEEDS[split]}:{i}" for i in range(first, first + N_TEST)]


def ll_ref_file(split: str) -> Path:
    return HERE / "private" / ("ll_ref.npy" if split == "test" else f"ll_ref_{split}.npy")


def reference_posterior(ds):
    """The reference FB posterior, fitted to the training spikes (what LL_ref is estimated with)."""
    from methods.poglm.inference import fit

    torch.manual_seed(0)
    return fit(ds.train[..., :N_VIS], N_HID, q_kind="FB", estimator="gs_pathwise", tau=0.5, K=5,
               epochs=15, fixed_params=ds.params, seed=0).q


def reference_ll(ds, split: str = "test", q=None) -> np.ndarray:
    """IWAE-5000 ln p(X) per held-out sequence of ``split`` under the reference FB posterior."""
    from methods.poglm.inference import evaluate

    q = reference_posterior(ds) if q is None else q
    _, mll = evaluate(ds.params, q, visible(ds, split), S=REF_SAMPLES, seed=1)
    return mll.numpy()


@torch.no_grad()
def log_weights(params, x: torch.Tensor, lam: torch.Tensor, z: torch.Tensor | None, S: int,
                gen: torch.Generator) -> torch.Tensor:
    """(S, B) log-weights ln p(X, Z) - ln q(Z | X); Z drawn here from the rates unless given."""
    from methods.poglm.glm import poisson_logpmf
    from methods.poglm.inference import log_joint_poisson

    B = x.shape[0]
    lam = lam.to(torch.float64)
    if not torch.isfinite(lam).all() or (lam <= 0).any():
        raise ValueError("Q.rates must be positive and finite")
    if z is None:
        lam = lam.repeat(S, 1, 1)
        z = torch.poisson(lam, generator=gen)
    elif tuple(z.shape) != tuple(lam.shape) or tuple(z.shape) != (S * B, T, N_HID) or (
            (z < 0).any() or (z != z.round()).any()):
        raise ValueError("an autoregressive Q's draws must be counts of shape (S*B, T, hidden)")
    log_q = poisson_logpmf(z, lam).sum(dim=(-1, -2))
    log_p = log_joint_poisson(params, x.repeat(S, 1, 1), z)
    return (log_p - log_q).view(S, B)


def score(outputs: str) -> float:
    return _score(outputs, "test")


def search_score(outputs: str) -> float:
    return _score(outputs, "search")


def select_score(outputs: str) -> float:
    return _score(outputs, "select")


def _score(outputs: str, split: str) -> float:
    torch.set_num_threads(1)
    ds = dataset()
    ll_path = ll_ref_file(split)
    ll_ref = np.load(ll_path) if ll_path.exists() else reference_ll(ds, split)
    produced = {k: torch.from_numpy(v) for k, v in load_outputs(outputs).items()}
    x_test = visible(ds, split)
    if "z" not in produced and tuple(produced["lam"].shape) != (x_test.shape[0], T, N_HID):
        raise ValueError(f"Q.rates must return a tensor of shape {(x_test.shape[0], T, N_HID)}")
    lw = log_weights(ds.params, x_test, produced["lam"], produced.get("z"), EVAL_SAMPLES,
                     torch.Generator().manual_seed(12345))
    elbo = lw.mean(dim=0).numpy()
    if not np.isfinite(elbo).all():
        raise ValueError("the ELBO is not finite (q gives zero probability to a likely hidden train)")
    gap = float(np.mean(ll_ref - elbo))
    print(f"{split} ELBO {elbo.mean():.3f}, LL_ref {ll_ref.mean():.3f}, elbo_gap {gap:.3f} nats/sequence")
    return gap
