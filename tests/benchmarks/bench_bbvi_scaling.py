"""Iterations and seconds to KL ≤ floor + 0.5 for mean-field, structured and full-rank BBVI.

For N = 8, 16, 32, 64 (d = 2 + 2N) each family gets its best constant Adam step over a grid
(10^-1.5 down to 10^-4 in steps of 0.25, 8 samples, problem seed 0 = Monte Carlo seed 0). The
sweep is pruned: it walks down from the largest step, caps each run at the best count so far,
gives up on a run that stalls (10 checks without closing 1% of its gap to the target), stops
once a smaller step is slower, and starts each larger N two grid points above the previous
best. Prints the table and the growth exponent of iterations in N for each family (the
paper's claim: O(N) for structured, O(N²) for full-rank; mean-field is measured against its own
floor, so its count says nothing about accuracy). Usage:
    python tests/benchmarks/bench_bbvi_scaling.py [--Ns 8 16 32 64] [--cap 40000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from methods.structured_bbvi import FAMILIES, Family, fit, make_optimizer, make_problem

GRID = [-1.5 - 0.25 * i for i in range(11)]  # -1.5 ... -4.0


def best_iterations(problem, family: str, cap: int, start: float = GRID[0]) -> tuple[int | None, float | None, float]:
    """(iterations, log10 lr, CPU seconds of the best run) over the pruned descending sweep.

    CPU time rather than wall time: on a shared machine the wall clock measures the neighbours."""
    target = (problem.kl_floor_meanfield if family == "meanfield" else 0.0) + 0.5
    best: tuple[int | None, float | None, float] = (None, None, float("nan"))
    for x in [g for g in GRID if g <= start + 1e-9]:
        q = Family.create(family, problem.dims)
        opt = make_optimizer("adam", q.leaves(), 10.0**x)
        limit = best[0] if best[0] is not None else cap
        cpu = time.process_time()
        result = fit(problem, q, opt, iters=limit, target=target, stall_checks=10)
        cpu = time.process_time() - cpu
        if result.iters_to_eps is not None and (best[0] is None or result.iters_to_eps < best[0]):
            best = (result.iters_to_eps, x, cpu)
        elif best[0] is not None:
            break  # past the best step: smaller steps are only slower
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--Ns", type=int, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--cap", type=int, default=40_000)
    ns = parser.parse_args()
    torch.set_num_threads(1)
    table: dict[str, list[int | None]] = {f: [] for f in FAMILIES}
    start = {f: GRID[0] for f in FAMILIES}  # a larger N never needs a larger step
    print(f"{'N':>4} {'d':>4} | " + " | ".join(f"{f:>30}" for f in FAMILIES))
    print(f"{'':>10} | " + " | ".join(f"{'iters @ log10 lr, cpu s (ms/it)':>30}" for _ in FAMILIES))
    for N in ns.Ns:
        problem = make_problem(N, problem_seed=0)
        cells = []
        for family in FAMILIES:
            t0 = time.perf_counter()
            iters, x, seconds = best_iterations(problem, family, ns.cap, start[family])
            table[family].append(iters)
            if x is not None:
                start[family] = min(GRID[0], x + 0.5)
            if iters is None:
                cells.append(f"{'miss':>30}")
            else:
                cells.append(f"{iters:>6} @ {x:5.2f}, {seconds:6.1f}s ({1e3 * seconds / iters:5.2f})")
            print(f"  [{family} N={N}: sweep {time.perf_counter() - t0:.0f}s]", flush=True)
        print(f"{N:>4} {problem.d:>4} | " + " | ".join(cells), flush=True)
    print("growth exponent of iterations in N (log-log slope):")
    for family, counts in table.items():
        pts = [(n, c) for n, c in zip(ns.Ns, counts) if c is not None]
        if len(pts) >= 2:
            slope = np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0]
            print(f"  {family:10s} {slope:.2f}")
    print("(paper: structured O(N), full-rank O(N^2); counts are quantised to 100 iterations)")


if __name__ == "__main__":
    main()
