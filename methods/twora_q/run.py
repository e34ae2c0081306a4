"""The ``q_estimation_run`` tool: resolve per-env defaults, run, and report JSON-ready numbers."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from methods.twora_q.experiment import run_maxbias, run_random
from methods.twora_q.learners import make_learner
from methods.twora_q.mdp import make_random_mdp, q_star
from methods.twora_q.tools import QEstimationArgs

DEFAULTS: dict[str, dict[str, Any]] = {
    "random": dict(n_tables=10, rho0=50.0, rho_schedule="t2", rho_weight=10_000, alpha0=0.01,
                   alpha_weight=100_000, runs=20, gamma=0.9),
    "maxbias": dict(n_tables=5, rho0=0.5, rho_schedule="t", rho_weight=100, alpha0=0.1,
                    alpha_weight=None, runs=2000, gamma=1.0),
}
UNSET_MEANS_CONSTANT = {"alpha_weight"}


def resolve(args: QEstimationArgs) -> dict[str, Any]:
    """All arguments with the env's defaults filled in (what the report records as config)."""
    config = args.model_dump()
    explicit = args.model_fields_set
    for key, value in DEFAULTS[args.env].items():
        if config[key] is None and not (key in UNSET_MEANS_CONSTANT and key in explicit):
            config[key] = value
    return config


def q_estimation_run(args: QEstimationArgs) -> dict[str, Any]:
    cfg = resolve(args)
    learner = make_learner(cfg["method"], cfg["n_tables"], scale_step=cfg["scale_step"],
                           double_variant=cfg["double_variant"])
    cfg["n_tables"] = learner.n_tables  # q and double fix their own table count
    common = dict(runs=cfg["runs"], seed=cfg["seed"], alpha0=cfg["alpha0"],
                  alpha_weight=cfg["alpha_weight"], rho0=cfg["rho0"] if cfg["method"] == "2ra" else 0.0,
                  rho_schedule=cfg["rho_schedule"], rho_weight=cfg["rho_weight"])
    print(f"q_estimation_run: {cfg['method']} on {cfg['env']} ({cfg['runs']} runs)", file=sys.stderr)
    if cfg["env"] == "maxbias":
        res = run_maxbias(learner, episodes=cfg["episodes"], gamma=cfg["gamma"],
                          epsilon=cfg["epsilon"], **common)
        return {
            "config": cfg,
            "left_pct_curve": [round(x, 3) for x in res.left_pct_curve],
            "left_pct_first50": res.left_pct_first50,
            "left_pct_last100": res.left_pct_last100,
            "bias": res.bias,
        }
    mdp = make_random_mdp(cfg["env_seed"], cfg["gamma"])
    qs = q_star(mdp)
    res = run_random(learner, mdp, steps=cfg["steps"], log_every=cfg["log_every"], qstar=qs, **common)
    return {
        "config": cfg,
        "mse_curve": [{"step": s, "mse": m, "se": e} for s, m, e in zip(res.steps, res.mse, res.se)],
        "mse_final": res.mse_final,
        "mse_auc": res.mse_auc,
        "bias": res.bias,
        "q_star": np.round(qs, 6).tolist(),
    }
