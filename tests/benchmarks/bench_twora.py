"""Cost of a 2RA update against a Watkins Q-learning update on the same MDP and stream.

The paper says the cost is comparable; the goal here is a ratio of at most 1.5. Prints a
table (seconds per update, final MSE) and the ratio; asserts nothing (timings are not tests).
Run: python tests/benchmarks/bench_twora.py [--steps 100000] [--runs 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

from methods.twora_q import (
    make_learner,
    make_random_mdp,
    q_star,
    run_random,
    sample_trajectories,
)
from methods.twora_q.experiment import streams


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    mdp = make_random_mdp(1234)
    qs = q_star(mdp)
    stream = sample_trajectories(mdp, a.steps, a.runs, streams(0)[0])
    configs = {
        "Q (Watkins)": (make_learner("q"), dict(alpha0=0.01)),
        "2RA N=10 rho=50": (make_learner("2ra", 10), dict(alpha0=0.01, rho0=50.0)),
    }
    rows = {}
    for name, (learner, kw) in configs.items():
        best, mse = float("inf"), float("nan")
        for _ in range(a.repeats):  # min over repeats: the least disturbed by other load
            t0 = time.perf_counter()
            res = run_random(learner, mdp, steps=a.steps, runs=a.runs, qstar=qs, transitions=stream, **kw)
            best = min(best, time.perf_counter() - t0)
            mse = res.mse_final
        rows[name] = (best / a.steps, mse)
    print(f"random MDP env_seed 1234, {a.steps} steps x {a.runs} runs (vectorised), best of {a.repeats}")
    print(f"{'method':<18} {'us/update-step':>15} {'final MSE':>10}")
    for name, (sec, mse) in rows.items():
        print(f"{name:<18} {sec * 1e6:>15.2f} {mse:>10.4f}")
    q, r = rows["Q (Watkins)"][0], rows["2RA N=10 rho=50"][0]
    print(f"cost ratio 2RA / Q = {r / q:.2f}  (goal <= 1.5)")


if __name__ == "__main__":
    main()
