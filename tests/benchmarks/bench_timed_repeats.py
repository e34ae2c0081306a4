"""Host cost of a timed task's repeats: what scoring adds around each repeat's command.

The tests' tiny timed task (``tests/environments/test_seam.py: timed_task``: ``fast.run``
reverses the challenge, so a repeat's own work is a Python start-up) over a workspace of
``n`` small files besides the submission; each scoring is run ``--scorings`` times. Printed
per size: the whole scoring's wall time (median), the repeats run (pairs x 2), and the
wall time per repeat, which is the sandbox's command plus what the host does between two
repeats (the workspace checked or laid again, the sandbox renewed:
``environments/scoring/evaluate.py: _Repeated``).

    python tests/benchmarks/bench_timed_repeats.py [--sizes 0,1000] [--scorings 3] [--sandbox local]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def one(n: int, scorings: int, sandbox: str) -> dict:
    from environments.scoring.evaluate import evaluate
    from environments.task.spec import load_task
    from tests.environments.test_seam import FAST, timed_task

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        os.environ["LABCOAT_HOME"] = str(Path(tmp) / "home")
        task = load_task(timed_task(Path(tmp)))
        ws = Path(tmp) / "ws"
        (ws / "pkg").mkdir(parents=True)
        (ws / "pkg" / "__init__.py").write_text("")
        (ws / "fast.py").write_text(FAST)
        for i in range(n):
            folder = ws / "data" / f"d{i // 100:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{i:06d}.txt").write_text(f"{i}\n")
        walls, repeats = [], []
        for _ in range(scorings):
            t = time.perf_counter()
            result = evaluate(task, ws, sandbox)
            walls.append(time.perf_counter() - t)
            assert result.paired is not None, result.detail
            repeats.append(2 * len(result.paired.submission_seconds))
        wall, reps = statistics.median(walls), statistics.median(repeats)
        return {"files": n, "wall_s": wall, "repeats": reps, "per_repeat_s": wall / reps}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0,1000")
    parser.add_argument("--scorings", type=int, default=3)
    parser.add_argument("--sandbox", default="local")
    args = parser.parse_args()
    rows = [one(int(s), args.scorings, args.sandbox) for s in args.sizes.split(",")]
    print(f"{'files':>8} {'scoring s':>10} {'repeats':>8} {'ms/repeat':>10}")
    for r in rows:
        print(f"{r['files']:>8,} {r['wall_s']:>10.2f} {r['repeats']:>8.0f} "
              f"{r['per_repeat_s'] * 1000:>10.0f}")


if __name__ == "__main__":
    main()
