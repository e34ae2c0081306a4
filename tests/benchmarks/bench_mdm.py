"""EM time per iteration against the number of clients (10^2, 10^3, 10^4).

Federated EM touches every client once per iteration, so the time must grow linearly; the
script prints the table and the fitted log-log exponent (goal: about 1). Asserts nothing.
Run: python tests/benchmarks/bench_mdm.py [--iters 20] [--K 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from methods.fed_mdm import builtin_truth, fit_mdm, sample_clients


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--K", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    truth = builtin_truth()
    sizes = [100, 1_000, 10_000]
    per_iter = []
    print(f"K={a.K}, C=10, {a.iters} EM iterations, best of {a.repeats}")
    print(f"{'clients':>8} {'ms/iteration':>13} {'us/client/iteration':>20}")
    for u in sizes:
        counts, _ = sample_clients(truth.phi, truth.alphas, u, np.random.default_rng(0))
        best = float("inf")
        for _ in range(a.repeats):  # min over repeats: the least disturbed by other load
            t0 = time.perf_counter()
            fit_mdm(counts, a.K, iters=a.iters)
            best = min(best, (time.perf_counter() - t0) / a.iters)
        per_iter.append(best)
        print(f"{u:>8} {best * 1e3:>13.3f} {best / u * 1e6:>20.3f}")
    slope = np.polyfit(np.log(sizes), np.log(per_iter), 1)[0]
    slope_top = np.log(per_iter[2] / per_iter[1]) / np.log(10)
    print(f"fitted exponent (all sizes) = {slope:.2f}; 10^3 -> 10^4 = {slope_top:.2f} (linear = 1; "
          "below 1 at small sizes is fixed per-iteration overhead)")


if __name__ == "__main__":
    main()
