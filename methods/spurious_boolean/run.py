"""The ``boolean_spurious_run`` experiment: one run per seed, then a summary."""

from __future__ import annotations

import sys
import time
from typing import Any

import torch

from methods.spurious_boolean.data import BooleanTask
from methods.spurious_boolean.tools import SpuriousArgs
from methods.spurious_boolean.train import RunConfig, run_seed, test_set
from methods.toolspec import seed_list


def config_from_args(args: SpuriousArgs) -> RunConfig:
    task = BooleanTask(args.n_core, args.n_spur, args.k_core, args.k_spur)
    fields = args.model_dump(exclude={"n_core", "n_spur", "k_core", "k_spur", "seeds"})
    # The tool's names follow the tools' conventions; RunConfig keeps the paper's (lam, batch).
    fields["lam"], fields["batch"] = fields.pop("spurious_prob"), fields.pop("batch_size")
    return RunConfig(task=task, **fields)


def run_tool(args: SpuriousArgs) -> dict[str, Any]:
    torch.set_num_threads(1)
    start = time.perf_counter()
    cfg = config_from_args(args)
    seeds = seed_list(args.seeds)
    test = test_set(cfg)
    runs = []
    for seed in seeds:
        run = run_seed(cfg, seed, test)
        runs.append(run)
        print(f"seed {seed}: steps_to_core {run['steps_to_core']}, "
              f"WGA {run['final']['worst_group_acc']:.3f}", file=sys.stderr)
    hits = [r["steps_to_core"] for r in runs]
    llr = [r["llr"]["worst_group_acc"] for r in runs if r["llr"] is not None]
    return {
        "config": {**args.model_dump(), "seeds": seeds},
        "runs": runs,
        "summary": {
            "steps_to_core_mean": sum(args.steps if h is None else h for h in hits) / len(hits),
            "n_unreached": sum(h is None for h in hits),
            "worst_group_acc_mean": sum(r["final"]["worst_group_acc"] for r in runs) / len(runs),
            "llr_worst_group_acc_mean": sum(llr) / len(llr) if llr else None,
        },
        "seconds": time.perf_counter() - start,
    }
