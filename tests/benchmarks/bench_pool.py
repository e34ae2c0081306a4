"""The research pool's throughput and result (issue #39's goals), measured in one run.

1. **Nodes scored per minute with 2 workers vs 1** on the same task and budget (baseline
   operators; goal: a ratio of at least 1.7 on 2 idle cores). A node's scripts run in the
   worker's own sandbox, one thread each (each worker gets its share of the cores).
2. **The pool's overhead per node against the node's sandbox time** (goal: at most 10%): on the
   worker, the node's time outside its sandbox command (copying its parent, writing the
   setting, opening the sandbox), the harness's search scoring shown apart; on the driver, the
   gap between a worker's node ending and its next one starting (recording the node as a step,
   choosing and sending the next).
3. **Final test score of the pool (2 workers) vs the sequential no-LLM baseline agent**
   (``labcoat run TASK``) at equal wall clock (``--seconds`` each, the same for both).

Prints numbers and ratios; asserts nothing (timings are not tests). The load average is
printed before and after: on a shared machine the ratios say as much about the neighbours.
Run: python tests/benchmarks/bench_pool.py [--task digits] [--seconds 240] [--seeds 0]
[--skip-one-worker] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent import session  # noqa: E402
from agent.config import ActorConfig  # noqa: E402
from agent.pool.records import nodes_of  # noqa: E402
from agent.pool.settings import PoolSettings  # noqa: E402
from environments.record.runs import Budgets  # noqa: E402


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def pool_run(task: str, workers: int, seconds: float, seed: int, runs: Path) -> dict:
    config = ActorConfig(kind="pool", seed=seed, pool=PoolSettings(workers=workers))
    began = time.monotonic()
    s = session.start(task, config, Budgets(max_time=seconds, max_steps=1000), runs, sandbox="local")
    meta = s.drive()
    wall = time.monotonic() - began
    recs = [r for r, _ in nodes_of(s.run.steps())]
    scored = [r for r in recs if r.scored]
    first = min(at(r.started_at) for r in recs)
    last = max(at(r.ended_at) for r in recs)
    gaps = []
    for w in {r.worker for r in recs}:
        mine = sorted((r for r in recs if r.worker == w), key=lambda r: r.started_at)
        gaps += [at(b.started_at) - at(a.ended_at) for a, b in zip(mine, mine[1:])]
    [score] = session.score(s.run, sandbox="local")
    return {"run": s.run.path.name, "status": meta.status, "nodes": len(recs), "scored": len(scored),
            "span": last - first, "wall": wall,
            "per_min": len(scored) / ((last - first) / 60),
            "sandbox": statistics.mean(r.sandbox_seconds for r in recs),
            "worker_overhead": statistics.mean(r.wall_seconds - r.sandbox_seconds - r.score_seconds for r in recs),
            "scoring": statistics.mean(r.score_seconds for r in recs),
            "driver_gap": statistics.mean(gaps) if gaps else 0.0,
            "cpu": statistics.mean(r.cpu_seconds or 0 for r in recs),
            "test": score.value}


def baseline_run(task: str, seconds: float, seed: int, runs: Path) -> dict:
    config = ActorConfig(kind="baseline", model=f"baseline/hparam?max_seconds={seconds:g}", seed=seed)
    began = time.monotonic()
    s = session.start(task, config, Budgets(max_time=seconds, max_steps=1000), runs, sandbox="local")
    meta = s.drive()
    wall = time.monotonic() - began
    [score] = session.score(s.run, sandbox="local")
    return {"run": s.run.path.name, "status": meta.status, "steps": meta.totals.steps, "wall": wall,
            "test": score.value}


def throughput(one: dict, two: dict) -> None:
    print(f"  nodes scored/min: 1 worker {one['per_min']:.2f}, 2 workers {two['per_min']:.2f}, "
          f"ratio {two['per_min'] / one['per_min']:.2f} (goal >= 1.7)")
    # the runs draw different settings (an EPOCHS=60 node costs more): weighed by each
    # node's own CPU seconds, the ratio compares the same amount of work
    work = (two['per_min'] * two['cpu']) / (one['per_min'] * one['cpu'])
    print(f"  CPU-seconds of nodes scored per minute: ratio {work:.2f}; per node CPU "
          f"{one['cpu']:.2f} s (1 worker) vs {two['cpu']:.2f} s (2 workers)")
    for label, r in (("1 worker", one), ("2 workers", two)):
        print(f"  {label}: per node sandbox {r['sandbox']:.2f} s, worker overhead "
              f"{r['worker_overhead']:.2f} s ({r['worker_overhead'] / r['sandbox']:.1%} of sandbox), "
              f"driver gap {r['driver_gap']:.2f} s ({r['driver_gap'] / r['sandbox']:.1%}), "
              f"search scoring {r['scoring']:.2f} s ({r['scoring'] / r['sandbox']:.1%}), "
              f"cpu {r['cpu']:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", help="suite task (repeatable; default digits)")
    ap.add_argument("--seconds", type=float, default=240.0, help="each run's wall-clock budget")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--skip-one-worker", action="store_true",
                    help="only the 2-worker pool (and the baseline agent): the score table, no throughput ratio")
    args = ap.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    print(f"cores {os.cpu_count()}, load before {load()}, runs in {runs}", flush=True)
    table = []
    for task in args.task or ["digits"]:
        for seed in args.seeds:
            one = None if args.skip_one_worker else pool_run(task, 1, args.seconds, seed, runs)
            if one:
                print(f"{task} seed {seed} pool 1 worker : {one}", flush=True)
            two = pool_run(task, 2, args.seconds, seed, runs)
            print(f"{task} seed {seed} pool 2 workers: {two}", flush=True)
            if one:
                throughput(one, two)
            base = None if args.skip_baseline else baseline_run(task, args.seconds, seed, runs)
            if base:
                print(f"{task} seed {seed} baseline agent: {base}")
            table.append((task, seed, two, base))
            print(f"load now {load()}", flush=True)
    print("\n| task | seed | pool, 2 workers: test (nodes) | baseline agent: test (steps, wall s) |\n|---|---|---|---|")
    for task, seed, two, base in table:
        b = f"{base['test']} ({base['steps']}, {base['wall']:.0f})" if base else "-"
        print(f"| {task} | {seed} | {two['test']} ({two['nodes']}) | {b} |")


if __name__ == "__main__":
    main()
