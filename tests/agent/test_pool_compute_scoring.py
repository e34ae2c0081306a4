"""With a device, pool nodes are scored on CPU-only scoring actors, never on the GPU workers
(slow, serial: real Ray, the local sandbox).

This machine has no GPU and the sandbox refuses ``--device cuda`` without one (``sandbox.pyenv.
check_device``: every node's sandbox would fail), so a whole ``--device cuda`` run cannot be
made here. What can be checked honestly is the executor's placement on a Ray that *declares*
one GPU (``ray.init(num_gpus=1)``, which Ray accepts on any machine): the executor the driver
builds for ``--device cuda`` (``num_gpus = 1/workers`` each) runs the nodes on workers holding
their GPU share, hands each finished node to a scoring actor holding no GPU (and no CPU
reservation), frees the worker at once, and the harness's ledger line still names the node
with no step (what ``labcoat verify`` matches). Without a device nothing changes: no scoring
actor, each worker scores its own node.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from agent.pool.executors import RayExecutor
from agent.pool.operators import Operation
from agent.pool.worker import NodeJob
from environments.record import ledger
from environments.task.prepare import prepare_task
from environments.task.suite import resolve_task
from tests.agent.pool_task import write_pool_task

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.serial]


def jobs(tmp_path: Path, n: int) -> list[NodeJob]:
    task = prepare_task(resolve_task(write_pool_task(tmp_path / "task")), sandbox="local")
    start = tmp_path / "start"
    shutil.copytree(task.env_dir, start)
    (tmp_path / "run").mkdir()
    return [NodeJob(run_path=str(tmp_path / "run"), task=task, sandbox="local", node=i,
                    op=Operation("start", [], {}, {}), knobs=[], source=str(start), gpus=0.5)
            for i in range(1, n + 1)]


def drain(ex: RayExecutor, timeout: float = 120) -> dict:
    """Every node's record as the driver gets it; notes when a worker was free with its last
    node still being scored elsewhere."""
    out, freed_while_scoring = {}, False
    deadline = time.monotonic() + timeout
    while ex.in_flight() and time.monotonic() < deadline:
        done = ex.next_done(timeout=1.0)
        if done is None:
            freed_while_scoring |= bool(ex.idle) and ex.scoring_apart() > 0
            continue
        job, rec = done
        assert not isinstance(rec, str), rec
        out[job.node] = rec
    out["freed_while_scoring"] = freed_while_scoring
    return out


def test_gpu_workers_run_nodes_and_cpu_scoring_actors_score_them(tmp_path):
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False,
             object_store_memory=80 * 1024 * 1024, configure_logging=False)
    try:
        ex = RayExecutor(2, None, 1.0, 0.5)  # what --device cuda with --workers 2 builds
        try:
            for w in ex.actors.values():
                assert ray.get(w.resources.remote(), timeout=60) == {"CPU": 1.0, "GPU": 0.5}
            assert sorted(ex.scorers) == ["scorer-1", "scorer-2"]
            for s in ex.scorers.values():
                held = ray.get(s.resources.remote(), timeout=60)
                assert not held.get("GPU") and not held.get("CPU"), held
            work = jobs(tmp_path, 4)
            for job in work[:2]:
                ex.submit(job)
            for job in work[2:]:  # queued until a worker is free
                ex.submit(job)
            out = drain(ex)
        finally:
            ex.stop()
        assert out.pop("freed_while_scoring"), "no worker was free while its node was scored"
        assert sorted(out) == [1, 2, 3, 4]
        for node, rec in out.items():
            assert rec.status == "ok" and rec.search == 3.0, rec.reason
            assert rec.worker.startswith("worker-") and ex.scored_by[node].startswith("scorer-")
            assert rec.score_seconds > 0 and rec.gpu_seconds is not None
            assert rec.wall_seconds >= rec.sandbox_seconds + rec.score_seconds - 0.01
        calls = [e for e in ledger.read(Path(work[0].run_path)) if e.event == "call"]
        assert sorted(e.node for e in calls) == [1, 2, 3, 4]  # one line a node, as verify wants
        assert {(e.actor, e.split, e.purpose, e.step) for e in calls} == {("harness", "search", "search", None)}
    finally:
        ray.shutdown()


def test_without_a_device_each_worker_scores_its_own_node(tmp_path):
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             object_store_memory=80 * 1024 * 1024, configure_logging=False)
    try:
        ex = RayExecutor(1, None, 1.0, 0.0)
        try:
            assert ex.scorers == {}
            [job] = jobs(tmp_path, 1)
            job.gpus = 0.0
            ex.submit(job)
            out = drain(ex)
        finally:
            ex.stop()
        assert out[1].status == "ok" and out[1].search == 3.0 and out[1].score_seconds > 0
        assert ex.scored_by == {} and not out["freed_while_scoring"]
    finally:
        ray.shutdown()
