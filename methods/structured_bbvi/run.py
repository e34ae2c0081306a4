"""The ``bbvi_hierarchical`` experiment: a step-size sweep per family, best iterations to target."""

from __future__ import annotations

import math
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from methods.structured_bbvi.families import Family, n_scale_params
from methods.structured_bbvi.problem import HierProblem, make_problem
from methods.structured_bbvi.tools import BbviArgs
from methods.structured_bbvi.vi import RunResult, fit, make_optimizer


@dataclass(frozen=True)
class StepSize:
    """One point of a sweep: its label (log10 lr for Adam, c for SGD) and the actual lr."""

    label: float
    lr: float


def kl_floor(problem: HierProblem, family: str) -> float:
    return problem.kl_floor_meanfield if family == "meanfield" else 0.0


def run_one(problem: HierProblem, family: str, step: StepSize, args: BbviArgs, **over: Any) -> RunResult:
    """A fresh init, the sweep's shared Monte Carlo seed, one step size."""
    init, n_samples = args.init, args.mc_samples
    if args.optimizer == "sgd":
        init = init if "init" in args.model_fields_set else "identity"
        n_samples = n_samples if "mc_samples" in args.model_fields_set else 1
    q = Family.create(family, problem.dims, init=init, local_init=args.local_init)
    opt = make_optimizer(args.optimizer, q.leaves(), step.lr)
    after = (lambda: q.clamp_diagonal(args.sgd_diag_min)) if args.optimizer == "sgd" else None
    return fit(
        problem,
        q,
        opt,
        n_samples=n_samples,
        iters=over.get("iters", args.steps),
        eval_every=args.eval_every,
        target=kl_floor(problem, family) + args.kl_tolerance,
        mc_seed=args.seed,
        after_step=after,
    )


def step_sizes(args: BbviArgs, problem: HierProblem) -> list[StepSize]:
    if args.optimizer == "sgd":
        lam = problem.lambda_max
        return [StepSize(c, c / lam) for c in args.sgd_c]
    return [StepSize(x, 10.0**x) for x in args.lr_grid()]


def best_run(runs: list[tuple[StepSize, RunResult]]) -> tuple[StepSize, RunResult]:
    """Fewest iterations to target; ties and total misses go to the lowest KL reached."""

    def key(item: tuple[StepSize, RunResult]) -> tuple[float, float]:
        r = item[1]
        iters = r.iters_to_eps if r.iters_to_eps is not None else math.inf
        return (iters, r.final_kl if math.isfinite(r.final_kl) else math.inf)

    return min(runs, key=key)


def make_args_problem(args: BbviArgs) -> HierProblem:
    return make_problem(args.n_groups, args.d_global, args.d_local, args.obs_per_group, args.problem_seed)


def _job(args: BbviArgs, family: str, step: StepSize) -> RunResult:
    """One (family, step size) run in a worker process; the problem is rebuilt from its seed."""
    torch.set_num_threads(1)
    return run_one(make_args_problem(args), family, step, args)


def run_all(problem: HierProblem, args: BbviArgs) -> dict[str, list[tuple[StepSize, RunResult]]]:
    """Every (family, step size) run, spread over ``args.workers`` processes.

    The runs are independent and each seeds its own Monte Carlo stream, so the results are the
    same for any number of workers; workers only cut the wall-clock time on a multi-core CPU.
    """
    jobs = [(family, step) for family in args.families for step in step_sizes(args, problem)]
    if args.workers == 1:
        results = [run_one(problem, f, s, args) for f, s in jobs]
    else:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool:
            results = list(pool.map(_job, *zip(*[(args, f, s) for f, s in jobs])))
    out: dict[str, list[tuple[StepSize, RunResult]]] = {f: [] for f in args.families}
    for (family, step), result in zip(jobs, results):
        out[family].append((step, result))
        print(
            f"{family} step {step.label:g}: iters {result.iters_to_eps} "
            f"kl {result.final_kl:.3f} ({result.seconds:.1f}s)",
            file=sys.stderr,
        )
    return out


def summarise_family(
    problem: HierProblem, family: str, args: BbviArgs, runs: list[tuple[StepSize, RunResult]]
) -> dict[str, Any]:
    step, best = best_run(runs)
    n_samples = args.mc_samples
    if args.optimizer == "sgd" and "mc_samples" not in args.model_fields_set:
        n_samples = 1
    return {
        "n_scale_params": n_scale_params(family, problem.dims),
        "best_log10_lr": step.label if args.optimizer == "adam" else math.log10(step.lr),
        "best_sgd_c": step.label if args.optimizer == "sgd" else None,
        "iters_to_eps": best.iters_to_eps,
        "grad_evals_to_eps": None if best.iters_to_eps is None else best.iters_to_eps * n_samples,
        "final_kl": best.final_kl,
        "kl_floor": kl_floor(problem, family),
        "kl_curve": [{"iter": i, "kl": k} for i, k in best.curve],
        "per_lr": [
            {
                "log10_lr": s.label if args.optimizer == "adam" else math.log10(s.lr),
                "iters_to_eps": r.iters_to_eps,
                "final_kl": r.final_kl,
                "min_kl": r.min_kl,
                "nonfinite": r.nonfinite,
            }
            for s, r in runs
        ],
    }


def run_tool(args: BbviArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    problem = make_args_problem(args)
    runs = run_all(problem, args)
    families = {name: summarise_family(problem, name, args, runs[name]) for name in args.families}
    ratio = None
    if "full_rank" in families and "structured" in families:
        fr, st = families["full_rank"]["iters_to_eps"], families["structured"]["iters_to_eps"]
        ratio = fr / st if fr is not None and st else None
    return {
        "config": {**args.model_dump(), "log10_lr": args.lr_grid()},
        "problem": {
            "N": args.n_groups,
            "d": problem.d,
            "lambda_max": problem.lambda_max,
            "kl_floor_meanfield": problem.kl_floor_meanfield,
        },
        "families": families,
        "ratio_full_to_structured": ratio,
        "seconds": time.perf_counter() - start,
    }
