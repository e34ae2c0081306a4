"""Host cost of a step as the workspace grows: 0 / 1k / 10k / 100k small files.

Each size runs in its own process (so peak RSS is that run's own). Step 1 runs a script that
lays the files in the workspace (a dataset the agent unpacks) and records them; each later step runs a tiny script that writes one small file. Printed per size:

* ``step ms``: median wall time of the later steps (act + snapshot + trace line), and its
  ratio to the empty workspace's step (goal at 100k: <= 1.5x empty + 0.5 s);
* ``first ms``: from the episode's start to step 1's record: the sandbox's opening, the
  unpacking script, and step 1's snapshot (``1st snap``), which hashes and stores every new
  file;
* ``growth``: bytes the run directory gained per later step (goal: <= 1 MB);
* ``peak RSS`` of the process (goal: <= 400 MB);
* the step's shares, medians of the later steps: ``snapshot`` (``RunDir.snapshot``: an
  ``lstat`` of every file, git's index check; from 20k files split between processes, so
  ``snap cpu``, its CPU time in this process and its children, says what it cost the
  machine) and, as root, ``hand_over`` (the local sandbox
  giving the workspace to its uid before each command: only the folders whose ctime changed
  since the last hand-over are listed, ``sandbox/ownership.py``).

    python tests/benchmarks/bench_workspace_scale.py [--sizes 0,1000,10000,100000] [--steps 8] [--per-folder N]
    python tests/benchmarks/bench_workspace_scale.py --snapshots /tmp/old_snapshots.py  # "before"

``--snapshots`` and ``--ownership`` run with another ``environments/record/snapshots.py`` or
``sandbox/ownership.py`` (e.g. ``git show HEAD:sandbox/ownership.py``) in place of this
checkout's, for before/after tables.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PER_FOLDER = 1000
TINY = "import os, sys\nos.makedirs('out', exist_ok=True)\nn = len(os.listdir('out'))\n" \
       "open(f'out/{n}.txt', 'w').write(str(n))\nprint('wrote', n)\n"


def unpack_script(n: int, per_folder: int = PER_FOLDER) -> str:
    """A script laying ``n`` small files in folders of ``per_folder`` (``data/d000/f000000.txt``)."""
    return (f"import os\nfor i in range({n}):\n"
            f"    d = 'data/d%03d' % (i // {per_folder})\n"
            f"    if i % {per_folder} == 0:\n        os.makedirs(d, exist_ok=True)\n"
            f"    open('%s/f%06d.txt' % (d, i), 'w').write('%d\\n' % i)\n")


def new_bytes(path: Path, since_ns: int) -> int:
    """Bytes on disk of the files under ``path`` written after ``since_ns`` (each inode once)."""
    seen, total = set(), 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            st = os.lstat(os.path.join(dirpath, name))
            if st.st_mtime_ns > since_ns and st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
    return total


def one(n: int, steps: int, replace: dict[str, str], per_folder: int = PER_FOLDER) -> dict:
    for name, path in replace.items():  # another module, loaded before anything imports ours
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    from agent.actor import Proposal
    from agent.replay import ReplayActor
    from agent.runner import create_run, drive
    from environments.record.runs import RunDir
    from sandbox import local
    from tests.conftest import write_task

    spent: dict[str, list[float]] = {"snapshot": [], "hand_over": []}

    def cpu() -> float:  # this process and the children it reaped (a split walk's)
        return sum(t for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                   for t in resource.getrusage(who)[:2])

    def timed(owner, name: str, key: str) -> None:  # the shares of a step, measured in place
        real = getattr(owner, name)

        def wrapper(*a, **kw):
            t, c = time.perf_counter(), cpu()
            try:
                return real(*a, **kw)
            finally:
                spent[key].append(time.perf_counter() - t)
                spent.setdefault(f"{key}_cpu", []).append(cpu() - c)
        setattr(owner, name, wrapper)

    timed(RunDir, "snapshot", "snapshot")
    timed(local, "hand_over", "hand_over")

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        os.environ["LABCOAT_HOME"] = str(Path(tmp) / "home")
        task = write_task(Path(tmp) / "task", files={"env/tiny.py": TINY,
                                                     "env/unpack.py": unpack_script(n, per_folder)})
        actions = [Proposal(action="Execute Script", args={"script_name": "unpack.py"})]
        actions += [Proposal(action="Execute Script", args={"script_name": "tiny.py"})
                    for _ in range(steps - 1)]
        actor = ReplayActor(actions)
        run, spec = create_run(task, actor, Path(tmp) / "runs", sandbox="local")
        start = time.time()
        drive(run, spec, actor)
        recorded = [datetime.fromisoformat(s.time).timestamp() for s in run.steps()]
        assert len(recorded) == steps, [s.observation for s in run.steps()][-1:]
        later = [b - a for a, b in itertools.pairwise(recorded[1:])]
        t1_ns = int(recorded[1] * 1e9)  # step 2's record: what was written after it is growth
        grown = new_bytes(run.path / "snapshots", t1_ns) + run.trace_path.stat().st_size // steps
        return {"files": n, "step_s": statistics.median(later), "first_s": recorded[0] - start,
                "growth": grown / max(len(later), 1),
                "snapshot_s": statistics.median(spent["snapshot"][2:]),
                "snapshot_cpu_s": statistics.median(spent["snapshot_cpu"][2:]),
                "first_snapshot_s": spent["snapshot"][0],  # step 1 (the initial one is taken apart)
                "hand_over_s": statistics.median(spent["hand_over"][2:] or [0.0]),
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0,1000,10000,100000")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--per-folder", type=int, default=PER_FOLDER,
                        help="files per data folder (a dataset's images side by side: 100000)")
    parser.add_argument("--snapshots", help="another environments/record/snapshots.py to measure")
    parser.add_argument("--ownership", help="another sandbox/ownership.py to measure")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    replace = {name: path for name, path in (("environments.record.snapshots", args.snapshots),
                                             ("sandbox.ownership", args.ownership)) if path}
    if args.one is not None:
        print(json.dumps(one(args.one, args.steps, replace, args.per_folder)))
        return
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        cmd = [sys.executable, __file__, "--one", str(n), "--steps", str(args.steps),
               "--per-folder", str(args.per_folder)]
        for flag in ("snapshots", "ownership"):
            if getattr(args, flag):
                cmd += [f"--{flag}", getattr(args, flag)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if out.returncode:
            sys.exit(f"{n} files failed:\n{out.stderr[-3000:]}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    empty = rows[0]["step_s"]
    print(f"{'files':>8} {'step ms':>9} {'ratio':>7} {'goal ms':>8} {'snapshot':>9} "
          f"{'snap cpu':>9} {'hand_over':>10} {'first ms':>9} {'1st snap':>9} {'growth/step':>12} {'peak RSS':>9}")
    for r in rows:
        goal = 1.5 * empty + 0.5
        print(f"{r['files']:>8,} {r['step_s'] * 1000:>9.0f} {r['step_s'] / empty:>6.2f}x "
              f"{goal * 1000:>8.0f} {r['snapshot_s'] * 1000:>9.0f} {r['snapshot_cpu_s'] * 1000:>9.0f} {r['hand_over_s'] * 1000:>10.0f} "
              f"{r['first_s'] * 1000:>9.0f} {r['first_snapshot_s'] * 1000:>9.0f} {r['growth'] / 1e3:>9.1f} kB {r['rss_mb']:>6.0f} MB")


if __name__ == "__main__":
    main()
