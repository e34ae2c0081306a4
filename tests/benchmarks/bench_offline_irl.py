"""Membership-test time of the offline-IRL estimators against S, A, H and K (candidate rewards).

Run: ``python tests/benchmarks/bench_offline_irl.py``. Prints one table per swept size and the
fitted exponent of time in K, which must be about 1 (the tests are vectorised over rewards, with
no per-reward Python loop). Not collected by pytest; timings are never asserted.
"""

from __future__ import annotations

import time

import numpy as np

from methods.offline_irl import (
    candidate_pool,
    estimate_from_data,
    estimated_membership,
    exact_membership,
    generate_instance,
    sample_datasets,
)

VARIANTS = {
    "exact": None,
    "pirlo (hoeffding, cross)": dict(algorithm="pirlo", bonus="hoeffding", test="cross"),
    "pirlo (l1, tight)": dict(algorithm="pirlo", bonus="l1", test="tight"),
}


def _best_time(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def time_variants(S: int, A: int, H: int, K: int, n: int = 200, seed: int = 0) -> dict[str, float]:
    mdp, _ = generate_instance(S, A, H, seed)
    est = estimate_from_data(*sample_datasets(mdp, n, seed), S, A, H)
    R = candidate_pool(mdp.pi_E, A, seed, n_candidates=K)
    out = {}
    for name, kw in VARIANTS.items():
        if kw is None:
            cov, states = mdp.covered(), mdp.expert_states()
            out[name] = _best_time(
                lambda cov=cov, states=states: exact_membership(R, mdp.P, cov, states, mdp.pi_E))
        else:
            out[name] = _best_time(lambda kw=kw: estimated_membership(est, R, **kw))
    return out


def _table(title: str, key: str, rows: list[tuple[int, dict[str, float]]]) -> None:
    print(f"\n{title}")
    print(f"{key:>6} " + " ".join(f"{name:>26}" for name in VARIANTS))
    for value, times in rows:
        print(f"{value:>6} " + " ".join(f"{1e3 * times[name]:>23.2f} ms" for name in VARIANTS))


def main() -> None:
    base = dict(S=6, A=3, H=4, K=601)
    Ks = [250, 500, 1000, 2000, 4000, 8000]
    rows = [(K, time_variants(**(base | {"K": K}))) for K in Ks]
    _table("time vs K (S=6, A=3, H=4)", "K", rows)
    for name in VARIANTS:
        slope = np.polyfit(np.log(Ks), np.log([r[1][name] for r in rows]), 1)[0]
        print(f"fitted exponent of time in K, {name}: {slope:.2f} (linear = 1)")
    for key, values in (("S", [4, 8, 16, 32]), ("A", [2, 3, 6, 12]), ("H", [2, 4, 8, 16])):
        _table(f"time vs {key} (others at S=6, A=3, H=4, K=601)", key,
               [(v, time_variants(**(base | {key: v}))) for v in values])


if __name__ == "__main__":
    main()
