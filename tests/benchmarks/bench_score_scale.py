"""Host cost of scoring a run's steps as its workspace grows: 0 / 1k / 10k small files.

A data-only task (the tests' tiny task: eval.py reads ``result.txt``), or with ``--two-phase``
one whose ``produce.py`` copies ``result.txt`` into its outputs for ``score``; step 1 runs a script that
lays ``n`` small files in the workspace (a dataset the agent unpacks), each later step writes
``result.txt`` anew (one small file changed, so no two steps are the same workspace). The same
run is then scored both ways, in the same process:

* ``all-steps``: ``score_steps`` (one scratch and one sandbox synced to each step,
  ``environments/scoring/score_scratch.py``): ms per later step (the median time between two steps'
  progress calls), and the first step (which lays every file and opens the sandbox);
* ``alone``: ``score_run(run, task, step=k)`` for each step, what every step cost before (a
  fresh scratch copy of every file and a fresh sandbox): the median ms per later step;
* their ratio, and how each grows from the empty workspace.

    python tests/benchmarks/bench_score_scale.py [--sizes 0,1000,10000] [--steps 6] [--sandbox local]
        [--two-phase]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_workspace_scale import unpack_script

PRODUCE = ("import os, shutil\ndef produce(workspace, here, out):\n"
           "    shutil.copy(os.path.join(str(workspace), 'result.txt'), os.path.join(str(out), 'r.txt'))\n")
SCORE = "import os\ndef score(folder):\n    return float(open(os.path.join(folder, 'r.txt')).read())\n"


def one(n: int, steps: int, sandbox: str, two_phase: bool) -> dict:
    from agent.actor import Proposal
    from agent.replay import ReplayActor
    from agent.runner import create_run, drive
    from environments.scoring.score import score_run, score_steps
    from tests.conftest import write_task

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        os.environ["LABCOAT_HOME"] = str(Path(tmp) / "home")
        files = {"env/unpack.py": unpack_script(n), **({"scripts/produce.py": PRODUCE} if two_phase else {})}
        task_root = write_task(Path(tmp) / "task", files=files, eval_body=SCORE if two_phase else None)
        actions = [Proposal(action="Execute Script", args={"script_name": "unpack.py"})]
        actions += [Proposal(action="Write File", args={"file_name": "result.txt", "content": str(k)})
                    for k in range(2, steps + 1)]
        actor = ReplayActor(actions)
        run, task = create_run(task_root, actor, Path(tmp) / "runs", sandbox=sandbox)
        drive(run, task, actor)
        assert len(run.steps()) == steps, [s.observation for s in run.steps()][-1:]

        marks = [time.perf_counter()]
        scores = score_steps(run, task, sandbox=sandbox,
                             progress=lambda *_: marks.append(time.perf_counter()))
        together = [b - a for a, b in itertools.pairwise(marks)]
        alone, values = [], []
        for k in range(1, steps + 1):
            t = time.perf_counter()
            values.append(score_run(run, task, step=k, sandbox=sandbox).value)
            alone.append(time.perf_counter() - t)
        assert [s.value for s in scores] == values, ([s.value for s in scores], values)
        return {"files": n, "first_s": together[0], "step_s": statistics.median(together[1:]),
                "alone_s": statistics.median(alone[1:])}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0,1000,10000")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--two-phase", action="store_true", help="a task with scripts/produce.py")
    args = parser.parse_args()
    rows = [one(int(s), args.steps, args.sandbox, args.two_phase) for s in args.sizes.split(",")]
    e_new, e_old = rows[0]["step_s"], rows[0]["alone_s"]
    print(f"{'files':>8} {'all-steps ms/step':>18} {'x empty':>8} {'alone ms/step':>14} "
          f"{'x empty':>8} {'alone/all-steps':>16} {'first step ms':>14}")
    for r in rows:
        print(f"{r['files']:>8,} {r['step_s'] * 1000:>18.0f} {r['step_s'] / e_new:>7.2f}x "
              f"{r['alone_s'] * 1000:>14.0f} {r['alone_s'] / e_old:>7.2f}x "
              f"{r['alone_s'] / r['step_s']:>15.1f}x {r['first_s'] * 1000:>14.0f}")


if __name__ == "__main__":
    main()
