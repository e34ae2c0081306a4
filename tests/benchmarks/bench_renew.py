"""What ``Sandbox.renew`` costs: a command alone, and a renew followed by a command, per backend.

Timed repeats and ``score --all-steps`` renew the sandbox before each repeat or step (fresh
``/tmp`` and ``/dev/shm`` mounts, new namespaces), so this is their added cost per repeat. Both
figures come from the same sandbox in the same run; the ratio is printed.

    python tests/benchmarks/bench_renew.py [--reps 5] [--backends local,docker]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sandbox import SandboxLimits  # noqa: E402
from tests.sandbox.backends import docker_unavailable, make_sandbox  # noqa: E402


def measure(backend: str, reps: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp, make_sandbox(backend, tmp, SandboxLimits(timeout=60)) as sb:
        sb.exec(["true"])
        plain, renewed = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            assert sb.exec(["true"]).ok
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            sb.renew()
            assert sb.exec(["true"]).ok
            renewed.append(time.perf_counter() - t0)
    return statistics.median(plain), statistics.median(renewed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--backends", default="local,docker")
    args = ap.parse_args()
    for backend in args.backends.split(","):
        if backend == "docker" and docker_unavailable():
            print(f"docker: skipped ({docker_unavailable()})")
            continue
        plain, renewed = measure(backend, args.reps)
        print(f"{backend} (uid {os.geteuid()}): command {plain * 1e3:.1f} ms, renew + command "
              f"{renewed * 1e3:.1f} ms ({renewed / plain:.1f}x)")


if __name__ == "__main__":
    main()
