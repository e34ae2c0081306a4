"""A pool worker that dies mid-node has its node run again on a fresh worker (slow: real Ray).

The task's starting setting (node 1) sleeps long enough for the test to ``kill -9`` the Ray
worker process (``ray::PoolWorker``) whose sandbox runs it. A fresh actor replaces the dead one
(``RayExecutor.next_done``) and the node must be run once more on a worker that lives (the
driver's ``RETRIES``) and recorded once: not lost, not failed, not twice in the trace, one
ledger line; the run finishes, ``labcoat verify`` is ok, and no sandbox or child process is left.

The threads executor has no worker to kill: a thread cannot die apart from its process, and
``run_node`` turns every failure of a node into a failed record, so its retry path (an
exception escaping ``run_node``) is not reachable from outside without a mock of the code
under test; it shares the driver's retry with this one.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from agent import session
from agent.config import ActorConfig
from agent.pool.records import nodes_of
from agent.pool.settings import PoolSettings
from environments.record import ledger
from environments.record.runs import Budgets
from environments.reports.verify import verify_run
from tests.agent.helpers import children
from tests.agent.pool_task import write_pool_task

pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.serial]

SLOW_NODE_SECONDS = 6.0  # node 1 (A = B = 1); every other node runs in well under a second
OLD_ENOUGH = 2.0  # a train.py this old is node 1's

TRAIN = f"""import time
A = 1
B = 1
if A == 1 and B == 1:
    time.sleep({SLOW_NODE_SECONDS})
if A == 3 and B == 3:
    raise SystemExit("A = B = 3 fails on purpose")
open("result.txt", "w").write(f"{{2 * A + B}} {{A - B}} {{10 * A + B}}")
"""


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def _age(pid: int) -> float:
    """Seconds since ``pid`` started (its start time in clock ticks after boot)."""
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - int(_stat(pid)[19]) / os.sysconf("SC_CLK_TCK")


def worker_running_slow_node(under: int) -> int | None:
    """The ``ray::PoolWorker`` process (a descendant of ``under``) whose sandbox has run
    ``train.py`` for at least :data:`OLD_ENOUGH` seconds: node 1's."""
    for pid in children(under):
        try:
            if "train.py" not in _cmdline(pid) or _age(pid) < OLD_ENOUGH:
                continue
            up = pid
            while up > 1:
                up = int(_stat(up)[1])
                if _cmdline(up).startswith("ray::PoolWorker"):
                    return up
        except (OSError, ValueError, IndexError):
            continue
    return None


def kill_when_slow_node_runs(under: int, killed: list[int], stop: threading.Event) -> None:
    while not stop.is_set():
        pid = worker_running_slow_node(under)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.2)


def test_a_worker_killed_mid_node_has_its_node_retried_and_recorded_once(tmp_path):
    task = write_pool_task(tmp_path / "task")
    (task / "env" / "train.py").write_text(TRAIN)
    before = children(os.getpid())
    config = ActorConfig(kind="pool", pool=PoolSettings(workers=2))
    begun = session.start(task, config, Budgets(max_steps=30), tmp_path / "runs", sandbox="local")
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_when_slow_node_runs, args=(os.getpid(), killed, stop),
                              daemon=True)
    killer.start()
    try:
        meta = begun.drive()
    finally:
        stop.set()
        killer.join(5)
    assert killed, "node 1's worker was never found running it"
    assert meta.status == "finished", meta.status_reason
    recs = [r for r, _ in nodes_of(begun.run.steps())]
    assert sorted(r.id for r in recs) == list(range(1, 10))  # each node once in the trace
    first = next(r for r in recs if r.id == 1)
    assert first.status == "ok" and first.search == 3.0, first.reason  # retried, not lost/failed
    # node 1 is the first node sent, so worker-1 ran it and was killed; the retry runs on
    # whichever worker is free first: the survivor (worker-2) or the dead one's replacement
    assert first.worker.split("@")[0] in {"worker-2", "worker-3"}, first.worker
    calls = [e for e in ledger.read(begun.run.path) if e.event == "call" and e.node == 1]
    assert len(calls) == 1  # scored once: the killed run never reached its scoring
    verdict = verify_run(begun.run.path)
    assert verdict.ok, verdict.problems
    time.sleep(2)
    assert not Path(f"/proc/{killed[0]}").exists()
    assert children(os.getpid()) - before == set()  # Ray, its workers, the sandboxes: all gone
