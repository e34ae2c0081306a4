"""The ``online_lp_regret`` experiment: every method on the same arrivals, regret per seed."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np

from methods.online_lp.instances import make_instance
from methods.online_lp.offline import solve_offline
from methods.online_lp.policies import Concurrent, ExploreExploit, Policy, Subgradient
from methods.online_lp.simulate import Batch, PassResult, run_pass
from methods.online_lp.tools import OnlineLpArgs
from methods.toolspec import seed_list

POLICIES: dict[str, tuple[Any, tuple[str, ...]]] = {
    # method name -> (policy class with a ``create(horizon, d, **scales)``, the OnlineLpArgs
    # fields it takes by keyword): one table, so a new method is one row, not a new branch
    "subgradient": (Subgradient, ("alpha_scale",)),
    "explore_exploit": (ExploreExploit, ("explore_scale", "learn_scale", "exploit_scale",
                                         "explore_len_scale")),
    "concurrent": (Concurrent, ("conc_step_scale", "radius_scale", "learn_scale")),
}


def make_policy(name: str, args: OnlineLpArgs, d: np.ndarray) -> Policy:
    """A fresh policy for the batch's budget rows ``d`` (n, m)."""
    if name not in POLICIES:
        raise ValueError(f"methods: unknown method {name!r}")
    cls, fields = POLICIES[name]
    return cls.create(args.horizon, d, **{f: getattr(args, f) for f in fields})


def _learned(policy: Policy) -> np.ndarray | None:
    return getattr(policy, "learned_price", None)


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    n = values.size
    se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    return float(values.mean()), se


def summarise(
    result: PassResult, policy: Policy, opts: np.ndarray, ystars: np.ndarray, scales: np.ndarray
) -> dict[str, Any]:
    """Per-method block of the report (see the spec's Report list)."""
    regret = opts - result.reward
    mean, se = _mean_se(regret)
    learned = _learned(policy)
    block: dict[str, Any] = {
        "regret": regret.tolist(),
        "regret_mean": mean,
        "regret_se": se,
        "norm_regret_mean": float((regret / scales).mean()),
        "reward_mean": float(result.reward.mean()),
        "leftover_mean": float(result.leftover.sum(axis=1).mean()),
        "y_final_mean": result.y_final.mean(axis=0).tolist(),
        "dual_error_mean": float(np.linalg.norm(result.y_final - ystars, axis=1).mean()),
        "learned_dual_error_mean": (
            None if learned is None else float(np.linalg.norm(learned - ystars, axis=1).mean())
        ),
    }
    if result.trace_t:
        block["trace"] = {"t": result.trace_t, "y": result.trace_y}
    return block


def run_tool(args: OnlineLpArgs) -> dict[str, Any]:
    """Solve the hindsight LPs, run every method once over all seeds, report regrets."""
    start = time.perf_counter()
    seeds = seed_list(args.seeds)
    instances = [make_instance(args.family, args.horizon, args.n_resources, s, args.budget_per_arrival) for s in seeds]
    t0 = time.perf_counter()
    offline = [solve_offline(inst) for inst in instances]
    lp_seconds = time.perf_counter() - t0
    print(f"offline LPs: {lp_seconds:.2f}s for {len(seeds)} seeds", file=sys.stderr)
    opts = np.array([o.opt for o in offline])
    ystars = np.stack([o.ystar for o in offline])
    scales = np.array([inst.scale_s for inst in instances])
    batch = Batch.stack(instances)

    results: dict[str, Any] = {}
    for name in args.methods:
        t1 = time.perf_counter()
        policy = make_policy(name, args, batch.d)
        result = run_pass(policy, batch, trace_every=args.trace_every)
        results[name] = summarise(result, policy, opts, ystars, scales)
        print(
            f"{name}: regret {results[name]['regret_mean']:.2f} "
            f"({time.perf_counter() - t1:.2f}s)",
            file=sys.stderr,
        )
    ratios = {}
    if "subgradient" in results:
        base = results["subgradient"]["regret_mean"]
        ratios = {k: (v["regret_mean"] / base if base else None) for k, v in results.items()}
    return {
        "config": {**args.model_dump(), "seeds": seeds, "learning_dual": "hypothetical"},
        "instances": [
            {"seed": s, "offline_opt": o.opt, "ystar_lp": o.ystar.tolist(), "scale_s": inst.scale_s}
            for s, o, inst in zip(seeds, offline, instances)
        ],
        "lp_seconds": lp_seconds,
        "results": results,
        "ratio_to_subgradient": ratios,
        "seconds": time.perf_counter() - start,
    }
