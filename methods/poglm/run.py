"""The ``poglm_fit`` tool: data from a file or the generator, one fit, Poisson evaluation."""

from __future__ import annotations

import time
from typing import Any

import torch

from methods._data import load_npz
from methods.poglm.glm import DTYPE, GLMParams, generate
from methods.poglm.inference import (
    evaluate,
    fit,
    grad_relative_variance,
    log_q_poisson,
    weight_error,
)
from methods.poglm.posterior import Posterior
from methods.poglm.tools import FitArgs


def _load(args: FitArgs) -> tuple[torch.Tensor, torch.Tensor, GLMParams | None, torch.Tensor | None]:
    """(x_train, x_test, true params or None, true hidden test spikes or None)."""
    if args.spikes_npz is None:
        ds = generate(args.generator, args.n_train, args.n_test, args.n_bins, 3, args.n_hidden, args.seed)
        v = ds.n_vis
        return ds.train[..., :v], ds.test[..., :v], ds.params, ds.test[..., v:]
    f = load_npz(args.spikes_npz, "spikes_npz", required=("train", "test"), optional=("W", "b", "hidden_test"))
    x_tr = torch.as_tensor(f["train"], dtype=DTYPE)
    x_te = torch.as_tensor(f["test"], dtype=DTYPE)
    truth = None
    if "W" in f and "b" in f:
        truth = GLMParams(W=torch.as_tensor(f["W"], dtype=DTYPE), b=torch.as_tensor(f["b"], dtype=DTYPE), n_vis=x_tr.shape[-1])
    hidden = torch.as_tensor(f["hidden_test"], dtype=DTYPE) if "hidden_test" in f else None
    if x_tr.ndim != 3 or x_te.ndim != 3 or x_tr.shape[-1] != x_te.shape[-1]:
        raise ValueError("spikes_npz: train and test must be (S, T, N_vis) with the same N_vis")
    if truth is not None and truth.n_hid != args.n_hidden:
        raise ValueError(f"n_hidden: the ground truth has {truth.n_hid} hidden neurons")
    return x_tr, x_te, truth, hidden


def fit_tool(args: FitArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    x_tr, x_te, truth, hidden_test = _load(args)
    if args.fix_p and truth is None:
        raise ValueError("fix_p: needs the ground truth W and b")
    tau = args.tau if args.tau is not None else (1.0 if args.estimator == "score" else 0.5)
    n_vis = x_tr.shape[-1]

    grad_rel_var = None
    if args.grad_var_repeats > 0:
        # Probe at q's zero initialisation, with p at the truth when known (else p's zero start).
        n = n_vis + args.n_hidden
        p0 = truth or GLMParams(W=torch.zeros(n, n, dtype=DTYPE), b=torch.zeros(n, dtype=DTYPE), n_vis=n_vis)
        gen = torch.Generator().manual_seed(args.seed)
        grad_rel_var = grad_relative_variance(
            p0, Posterior(args.q, n_vis, args.n_hidden), x_tr[: args.batch_size], args.estimator,
            args.mc_samples, tau, args.n_categories, args.grad_var_repeats, gen,
        )

    out = fit(
        x_tr, args.n_hidden, q_kind=args.q, estimator=args.estimator, tau=tau, K=args.n_categories,
        epochs=args.epochs, batch=args.batch_size, S=args.mc_samples, lr_p=args.lr_p, lr_q=args.lr_q,
        fixed_params=truth if args.fix_p else None, seed=args.seed,
    )
    elbo, mll = evaluate(out.params, out.q, x_te, S=args.eval_samples, seed=args.seed)
    hidden_ll = None
    if hidden_test is not None:
        with torch.no_grad():
            hidden_ll = float(log_q_poisson(out.q, x_te, hidden_test).mean())
    return {
        "test_elbo": float(elbo.mean()),
        "test_mll": float(mll.mean()),
        "hidden_ll": hidden_ll,
        "weights": {"W": out.params.W.tolist(), "b": out.params.b.tolist()},
        "weight_err": weight_error(out.params.W, truth.W, n_vis) if truth is not None else None,
        "grad_rel_var": grad_rel_var,
        "train_elbo_curve": out.curve,
        "seconds": round(time.perf_counter() - start, 3),
        "config": {**args.model_dump(), "tau": tau},
    }
