"""Throughput of a batch of short runs with 1 and 2 workers (the local executor).

Each run is a replayed episode on a tiny task: write a script, execute it in the sandbox (a
CPU-bound loop of about ``--work`` seconds), Final Answer, then scoring in the sandbox. The
batch is timed end to end (worker start-up included) with ``--jobs 1`` and ``--jobs 2``; the
goal is a ratio of at least 1.8 on 2 otherwise idle cores. Prints runs/s and the ratio;
asserts nothing (timings are not tests). The machine's load average is printed too: on a busy
box the ratio says more about the neighbours than about the batch.
Run: python tests/benchmarks/bench_batch.py [--runs 8] [--work 1.0] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent.batch import BatchSpec, run_batch  # noqa: E402
from tests.conftest import write_task  # noqa: E402


def actions(path: Path, work: float) -> Path:
    script = (
        "import time\n"
        f"end = time.process_time() + {work}\n"
        "x = 0\n"
        "while time.process_time() < end:\n"
        "    x += 1\n"
        "open('result.txt', 'w').write('60')\n"
    )
    lines = [{"action": "Write File", "args": {"file_name": "train.py", "content": script}},
             {"action": "Execute Script", "args": {"script_name": "train.py"}},
             {"action": "Final Answer", "args": {"final_answer": "done"}}]
    path.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=8, help="runs per batch (seeds)")
    p.add_argument("--work", type=float, default=1.0, help="CPU seconds of each run's script")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--sandbox", default="local")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="labcoat-bench-batch-") as tmp:
        tmp = Path(tmp)
        os.environ["LABCOAT_HOME"] = str(tmp / "home")
        task = write_task(tmp / "tiny")
        model = f"replay/{actions(tmp / 'a.jsonl', a.work)}"
        best: dict[int, float] = {}
        for r in range(a.repeats):
            for jobs in (1, 2):
                spec = BatchSpec(tasks=[str(task)], models=[model], seeds=list(range(a.runs)),
                                 sandbox=a.sandbox)
                t0 = time.perf_counter()
                res = run_batch(tmp / f"batch-{jobs}-{r}", spec, jobs=jobs)
                took = time.perf_counter() - t0
                if res.done != a.runs:
                    raise SystemExit(f"batch failed: {res.results}")
                best[jobs] = min(best.get(jobs, float("inf")), took)
    print(f"{a.runs} runs of ~{a.work:g} CPU-s each, best of {a.repeats}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for jobs, took in best.items():
        print(f"  jobs={jobs}: {took:6.1f} s  {a.runs / took:.3f} runs/s")
    print(f"throughput ratio (2 workers / 1 worker): {best[1] / best[2]:.2f}  (goal >= 1.8)")


if __name__ == "__main__":
    main()
