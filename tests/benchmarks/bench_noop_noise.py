"""Benchmark: does a no-op vectorization submission ever score a success under load?

Issue 16: a runtime compared with a baseline taken at another load made a no-op a "success".
Scoring now pairs the submission with the pristine env/ in the same call (environments/scoring/timing.py).
This runs ``--scorings`` (default 20) scorings of the unmodified env/ while ``--busy`` (default
2) busy-loop processes load the machine, and prints the false successes (goal: 0), the
intervals, and the mean scoring time. ``python -m tests.benchmarks.bench_noop_noise``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import time
from pathlib import Path

from environments.scoring.score import make_score
from tests import task_checks as th


def _spin() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scorings", type=int, default=20)
    parser.add_argument("--busy", type=int, default=2)
    args = parser.parse_args()
    busy = [mp.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for p in busy:
        p.start()
    false_successes, seconds = 0, []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            spec = th.prepared_task("vectorization", Path(tmp) / "cache")
            ws = th.make_workspace(spec, Path(tmp) / "ws")
            for i in range(args.scorings):
                start = time.perf_counter()
                score = make_score(spec, th.score(spec, ws), None)
                seconds.append(time.perf_counter() - start)
                false_successes += score.success
                print(f"{i + 1:2d}: improvement {score.improvement:+.1%} interval "
                      f"{score.interval} success={score.success} ({seconds[-1]:.1f} s)", flush=True)
    finally:
        for p in busy:
            p.kill()
    print(f"no-op false successes under {args.busy} busy loops: {false_successes} of "
          f"{args.scorings}; scoring time {statistics.fmean(seconds):.2f} s on average")


if __name__ == "__main__":
    main()
