"""ELBO estimators, fitting and evaluation for the POGLM.

**Pathwise (GS)**: ELBO = mean_s[ln p(X, Y_s) - ln q(Y_s | X)] with relaxed hidden counts; the
*same* Concrete D is used for the hidden terms of p and of q, and the visible terms are Poisson
with rates driven by the soft counts. Gradients flow into theta and psi.
**Score** (the original POGLM baseline): discrete Z ~ Poisson(lambda^q) and the surrogate
ln p + sg(ln p - ln q) * ln q, with no control variate. tau plays no part in it (the spec's
tau = 1.0 for the score variant would only matter for a GS-sampled score estimator, which is not
implemented).

**Evaluation** switches both p and q back to Poisson: per test sequence, the ELBO
(mean of the log-weights) and the marginal log-likelihood by importance sampling
(log-mean-exp of the same draws), so test_elbo <= test_mll holds exactly (Jensen on the
empirical distribution).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import torch

from methods.poglm.glm import DTYPE, GLMParams, poisson_logpmf
from methods.poglm.posterior import Posterior, QKind
from methods.poglm.relax import concrete_log_density, log_pi, soft_count


def log_weights_gs(
    params: GLMParams, q: Posterior, x: torch.Tensor, S: int, tau: float, K: int, gen: torch.Generator | None = None
) -> torch.Tensor:
    """(S, B) relaxed log-weights ln p(X, Y) - ln q(Y | X) for visible spikes x (B, T, V)."""
    log_y, lp_q = q.sample_gs(x, S, tau, K, gen)
    z = soft_count(log_y)
    s = torch.cat([x.expand(S, *x.shape), z], dim=-1)
    lam = params.rates(s)
    v = params.n_vis
    ll_vis = poisson_logpmf(x, lam[..., :v]).sum(dim=(-1, -2))
    ll_hid = concrete_log_density(log_y, log_pi(lam[..., v:], K), tau).sum(dim=(-1, -2))
    lq = concrete_log_density(log_y, lp_q, tau).sum(dim=(-1, -2))
    return ll_vis + ll_hid - lq


def log_joint_poisson(params: GLMParams, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """ln p(X, Z) with Poisson counts; x (..., T, V) broadcast against z (..., T, H)."""
    s = torch.cat([x.expand(*z.shape[:-1], x.shape[-1]), z], dim=-1)
    return poisson_logpmf(s, params.rates(s)).sum(dim=(-1, -2))


def log_q_poisson(q: Posterior, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """ln q(Z | X) with Poisson counts."""
    return poisson_logpmf(z, q.rates(x.expand(*z.shape[:-1], x.shape[-1]), z)).sum(dim=(-1, -2))


def score_surrogate(params: GLMParams, q: Posterior, x: torch.Tensor, S: int, gen: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(surrogate (S, B), log-weights (S, B)): the surrogate's gradient is the score estimator."""
    z = q.sample_poisson(x, S, gen)
    lp = log_joint_poisson(params, x, z)
    lq = log_q_poisson(q, x, z)
    lw = lp - lq
    return lp + lw.detach() * lq, lw.detach()


def objective(
    params: GLMParams, q: Posterior, x: torch.Tensor, estimator: str, S: int, tau: float, K: int, gen: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss to minimise, per-sequence ELBO estimate) for one batch."""
    if estimator == "gs_pathwise":
        lw = log_weights_gs(params, q, x, S, tau, K, gen)
        return -lw.mean(), lw.detach().mean(dim=0)
    if estimator == "score":
        sur, lw = score_surrogate(params, q, x, S, gen)
        return -sur.mean(), lw.mean(dim=0)
    raise ValueError(f"estimator: unknown estimator {estimator!r}")


def grad_relative_variance(
    params: GLMParams, q: Posterior, x: torch.Tensor, estimator: str, S: int, tau: float, K: int,
    repeats: int, gen: torch.Generator,
) -> float:
    """sum_i Var(g_i) / ||mean g||^2 of the ELBO gradient w.r.t. psi over ``repeats`` estimates."""
    grads = []
    for _ in range(repeats):
        loss, _ = objective(params, q, x, estimator, S, tau, K, gen)
        g = torch.autograd.grad(-loss, list(q.parameters()))
        grads.append(torch.cat([t.reshape(-1) for t in g]))
    G = torch.stack(grads)
    return float(G.var(dim=0, unbiased=True).sum() / G.mean(dim=0).pow(2).sum())


@dataclass
class FitOutput:
    params: GLMParams
    q: Posterior
    curve: list[float] = field(default_factory=list)


def fit(
    x_train: torch.Tensor,
    n_hid: int,
    *,
    q_kind: QKind = "FB",
    estimator: str = "gs_pathwise",
    tau: float = 0.5,
    K: int = 5,
    epochs: int = 20,
    batch: int = 10,
    S: int = 5,
    lr_p: float = 0.05,
    lr_q: float = 0.1,
    fixed_params: GLMParams | None = None,
    seed: int = 0,
) -> FitOutput:
    """Fit q (and p unless ``fixed_params`` is given; p starts at zero) by Adam on -ELBO."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    n_vis = x_train.shape[-1]
    q = Posterior(q_kind, n_vis, n_hid)
    groups = [{"params": list(q.parameters()), "lr": lr_q}]
    if fixed_params is None:
        n = n_vis + n_hid
        W = torch.zeros(n, n, dtype=DTYPE, requires_grad=True)
        b = torch.zeros(n, dtype=DTYPE, requires_grad=True)
        params = GLMParams(W=W, b=b, n_vis=n_vis)
        groups.append({"params": [W, b], "lr": lr_p})
    else:
        params = GLMParams(W=fixed_params.W.detach(), b=fixed_params.b.detach(), n_vis=fixed_params.n_vis)
    opt = torch.optim.Adam(groups)
    curve = []
    for _ in range(epochs):
        perm = torch.randperm(len(x_train), generator=gen)
        total = 0.0
        for start in range(0, len(x_train), batch):
            xb = x_train[perm[start : start + batch]]
            loss, elbo = objective(params, q, xb, estimator, S, tau, K, gen)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(elbo.sum())
        curve.append(total / len(x_train))
    params = GLMParams(W=params.W.detach(), b=params.b.detach(), n_vis=n_vis)
    return FitOutput(params=params, q=q, curve=curve)


@torch.no_grad()
def evaluate(
    params: GLMParams, q: Posterior, x: torch.Tensor, S: int = 2000, seed: int = 0, chunk: int = 250
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence (ELBO, marginal log-likelihood) with Poisson p and q, from the same S draws."""
    gen = torch.Generator().manual_seed(seed)
    lws = []
    for start in range(0, S, chunk):
        z = q.sample_poisson(x, min(chunk, S - start), gen)
        lws.append(log_joint_poisson(params, x, z) - log_q_poisson(q, x, z))
    lw = torch.cat(lws)
    return lw.mean(dim=0), torch.logsumexp(lw, dim=0) - math.log(S)


def weight_error(W_fit: torch.Tensor, W_true: torch.Tensor, n_vis: int) -> float:
    """RMSE over W after the best permutation of the (exchangeable) hidden units."""
    n = W_true.shape[0]
    best = math.inf
    for perm in itertools.permutations(range(n_vis, n)):
        order = list(range(n_vis)) + list(perm)
        Wp = W_fit[order][:, order]
        best = min(best, float(((Wp - W_true) ** 2).mean().sqrt()))
    return best
