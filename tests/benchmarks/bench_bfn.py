"""Benchmark for BFN-Solver: Fréchet distance against NFE, and the speed-up at equal quality.

Run: ``python tests/benchmarks/bench_bfn.py`` (about a minute or two on two cores). On the
64-d digits GMM oracle (n = 2000 samples against 2000 fresh GMM samples, sampler seed 0), prints
1. FD for the original BFN sampler and the three BFN-Solvers at each NFE of the grid;
2. for each solver, the smallest NFE on the grid whose FD is at most the original sampler's FD
   at 50 NFE, and the ratio 50 / that NFE (the paper's headline is 5-20x on CIFAR-10; the spec
   expects about 1.5-2x at this scale). Nothing is asserted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from methods.bfn_solver.fd import frechet_distance  # noqa: E402
from methods.bfn_solver.gmm import GMMOracle, digits_gmm  # noqa: E402
from methods.bfn_solver.samplers import sample  # noqa: E402

N = 2000
GRID = (3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50)
SAMPLERS = ("bfn", "ode1", "ode2m", "sde2m")
TARGET_NFE = 50


def main() -> None:
    gmm = digits_gmm()
    oracle = GMMOracle(gmm)
    reference = gmm.sample(N, np.random.default_rng(123))
    floor = frechet_distance(gmm.sample(N, np.random.default_rng(7)), reference)
    start = time.perf_counter()
    fd = {
        (s, nfe): frechet_distance(sample(oracle, s, N, 64, nfe, np.random.default_rng(0)), reference)
        for s in SAMPLERS
        for nfe in GRID
    }
    print(f"== FD vs NFE (n = {N}; GMM-vs-GMM noise floor {floor:.3f}; {time.perf_counter() - start:.0f} s) ==")
    print(f"{'NFE':>5}" + "".join(f"{s:>10}" for s in SAMPLERS))
    for nfe in GRID:
        print(f"{nfe:>5}" + "".join(f"{fd[(s, nfe)]:>10.3f}" for s in SAMPLERS))
    target = fd[("bfn", TARGET_NFE)]
    print()
    print(f"== NFE needed to match the original sampler at {TARGET_NFE} NFE (FD {target:.3f}) ==")
    for s in SAMPLERS[1:]:
        hits = [nfe for nfe in GRID if fd[(s, nfe)] <= target]
        if hits:
            print(f"{s:>6}: {hits[0]:>3} NFE  -> speed-up {TARGET_NFE / hits[0]:.1f}x")
        else:
            print(f"{s:>6}: not reached within {GRID[-1]} NFE (its FD plateaus above the target)")


if __name__ == "__main__":
    main()
