"""Run directory size after 50 small edits in a workspace holding a 100 MB data file.

Prints (run dir bytes) / (workspace bytes). Goal: <= 1.05 — snapshots must store the data file
at most once (here: not at all, since it equals the task's env/ copy) and each edit only once.

    python tests/benchmarks/bench_run_size.py [--mb 100] [--steps 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agent.actor import Proposal  # noqa: E402
from agent.replay import ReplayActor  # noqa: E402
from agent.runner import create_run, drive  # noqa: E402
from tests.conftest import write_task  # noqa: E402


def du(path: Path) -> int:
    """Bytes on disk, counting each inode once (as `du` does)."""
    seen, total = set(), 0
    for p in path.rglob("*"):
        st = p.lstat()
        if p.is_file() and st.st_ino not in seen:
            seen.add(st.st_ino)
            total += st.st_blocks * 512
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LABCOAT_HOME"] = str(Path(tmp) / "home")
        task = write_task(Path(tmp) / "task", read_only="data.bin\n")
        with open(task / "env" / "data.bin", "wb") as f:
            for _ in range(args.mb):
                f.write(os.urandom(1 << 20))
        actions = [Proposal(action="Write File", args={"file_name": "train.py",
                                                       "content": f"LR = {i}e-4\nprint(LR)\n"})
                   for i in range(args.steps)]
        actor = ReplayActor(actions)
        start = time.perf_counter()
        run, spec = create_run(task, actor, Path(tmp) / "runs", sandbox="local")
        drive(run, spec, actor)
        seconds = time.perf_counter() - start
        ws, total = du(run.workspace), du(run.path)
        print(f"steps={len(run.steps())} workspace={ws / 1e6:.1f} MB run_dir={total / 1e6:.1f} MB "
              f"ratio={total / ws:.4f} (goal <= 1.05) time={seconds:.1f}s "
              f"({seconds / args.steps * 1000:.0f} ms/step incl. snapshot)")


if __name__ == "__main__":
    main()
