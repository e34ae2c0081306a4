"""Where nodes run: Ray actors (the default; in this process's own Ray, or a cluster's at
``--address``), or threads of this process (``--pool-executor threads``: no Ray, for tests and
a machine without it). Both keep up to N nodes in flight and hand back whichever finishes
first, so the driver gives that worker its next node at once (no generation barrier).

When the run asks for a device (workers declare ``num_gpus``), the Ray executor keeps scoring
off the GPU workers: a worker only runs its node and is free again at once, and the finished
node is scored on ``search`` by a :class:`agent.pool.scoring.ScoringWorker` (one per worker,
no GPU, no CPU reserved: a short evaluation that must never wait behind the workers' cores).
The node reaches the driver when its scoring ends. Without a device each worker scores its own
node, as before (no extra actors).
"""

from __future__ import annotations

import os
import socket
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from agent.pool.records import NodeRecord
from agent.pool.scoring import ScoringWorker, needs_scoring
from agent.pool.worker import NodeJob, PoolWorker, run_node

CONNECT_SECONDS = 5.0
SCORER_CPUS = 0  # a scoring actor's reservation: none, so it never waits behind the workers'


class PoolError(RuntimeError):
    """The pool cannot run as asked (no Ray, a cluster that does not answer): one line."""


def host_port(address: str) -> tuple[str, int]:
    text = address.split("://", 1)[-1].strip()
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise PoolError(f"--address {address!r}: give the Ray head's host:port (ray start --head "
                        "prints it)")
    return host, int(port)


def check_address(address: str, timeout: float = CONNECT_SECONDS) -> None:
    """Refuse a cluster address nothing answers at, quickly (before a run folder exists):
    ``ray.init`` itself waits much longer before it gives up."""
    host, port = host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as err:
        raise PoolError(f"no Ray cluster answers at {address} ({err.strerror or err}); start one "
                        f"with `ray start --head` or leave --address out to start Ray here") from None


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class ThreadExecutor:
    """Nodes on threads of this process; CPU time is estimated (children of every thread mix)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pool-worker")
        self.running: dict[Future, tuple[NodeJob, str]] = {}
        self.free = [f"thread-{i}" for i in range(workers)]

    def submit(self, job: NodeJob) -> None:
        name = self.free.pop(0)
        job.rusage = False
        self.running[self.pool.submit(run_node, job, name)] = (job, name)

    def in_flight(self) -> list[NodeJob]:
        return [job for job, _ in self.running.values()]

    def scoring_apart(self) -> int:
        """Nodes in flight that hold no worker (being scored elsewhere): none here."""
        return 0

    def next_done(self, timeout: float = 1.0) -> tuple[NodeJob, NodeRecord | str] | None:
        done, _ = wait(list(self.running), timeout=timeout, return_when=FIRST_COMPLETED)
        if not done:
            return None
        fut = next(iter(done))
        job, name = self.running.pop(fut)
        self.free.append(name)
        try:
            return job, fut.result()
        except Exception as err:  # noqa: BLE001 - said as the node's failure
            return job, f"{type(err).__name__}: {err}"

    def stop(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)  # a thread cannot be killed: wait


class RayExecutor:
    """Nodes on Ray actors, one node each at a time, each declaring its CPUs (and GPUs)."""

    def __init__(self, workers: int, address: str | None, cpus: float, gpus: float) -> None:
        try:
            import ray
        except ImportError as err:
            raise PoolError("--agent pool runs its workers on Ray: pip install 'labcoat[ray]' "
                            "(or --pool-executor threads)") from err
        self.ray = ray
        self.workers, self.cpus, self.gpus = workers, cpus, gpus
        self.started_here = not ray.is_initialized()
        if self.started_here:
            try:
                if address:
                    check_address(address)
                    ray.init(address=address, log_to_driver=False, configure_logging=False)
                else:
                    ray.init(num_cpus=cores(), num_gpus=None, include_dashboard=False,
                             log_to_driver=False, object_store_memory=80 * 1024 * 1024,
                             configure_logging=False)
            except PoolError:
                raise
            except Exception as err:  # noqa: BLE001 - Ray's own failures, said in one line
                raise PoolError(f"Ray could not start{' at ' + address if address else ''}: "
                                f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}") from err
        self.remote = ray.remote(PoolWorker).options(num_cpus=cpus, num_gpus=gpus, max_restarts=0,
                                                     max_concurrency=1)
        self.actors: dict[str, Any] = {}
        self.idle: list[str] = []
        self.made = 0
        for _ in range(workers):
            self.idle.append(self._new_actor())
        self.running: dict[Any, tuple[NodeJob, str]] = {}
        # with a device: the scoring actors, and the nodes they score (ref -> job, scorer)
        self.scorers: dict[str, Any] = {}
        self.scoring: dict[Any, tuple[NodeJob, str]] = {}
        self.scored_by: dict[int, str] = {}  # node -> the scorer that scored it (checks, tests)
        self.queued: list[NodeJob] = []
        self.score_remote = ray.remote(ScoringWorker).options(
            num_cpus=SCORER_CPUS, num_gpus=0, max_restarts=0, max_concurrency=1)
        if gpus > 0:
            for i in range(workers):
                self.scorers[f"scorer-{i + 1}"] = self.score_remote.remote(f"scorer-{i + 1}")

    def _new_actor(self) -> str:
        self.made += 1
        name = f"worker-{self.made}"
        self.actors[name] = self.remote.remote(name)
        return name

    def submit(self, job: NodeJob) -> None:
        """Run ``job`` on a free worker, or queue it until one is free (a node whose scoring
        failed is run again while every worker runs another)."""
        if not self.idle:
            self.queued.append(job)
            return
        name = self.idle.pop(0)
        self.running[self.actors[name].run.remote(job, not self.scorers)] = (job, name)

    def _free(self, name: str) -> None:
        self.idle.append(name)
        if self.queued:
            self.submit(self.queued.pop(0))

    def in_flight(self) -> list[NodeJob]:
        return [job for job, _ in (*self.running.values(), *self.scoring.values())] + self.queued

    def scoring_apart(self) -> int:
        """Nodes in flight that hold no worker (being scored by a scoring actor): the driver
        may start as many more nodes."""
        return len(self.scoring)

    def _score_apart(self, job: NodeJob, rec: NodeRecord) -> None:
        """Hand ``rec`` to the scoring actor with the fewest nodes waiting."""
        load = {name: 0 for name in self.scorers}
        for _, name in self.scoring.values():
            load[name] += 1
        name = min(load, key=lambda n: load[n])
        self.scoring[self.scorers[name].score.remote(job, rec.model_dump())] = (job, name)

    def next_done(self, timeout: float = 1.0) -> tuple[NodeJob, NodeRecord | str] | None:
        ready, _ = self.ray.wait([*self.running, *self.scoring], num_returns=1, timeout=timeout)
        if not ready:
            return None
        ref = ready[0]
        if ref in self.scoring:
            return self._scored(ref)
        job, name = self.running.pop(ref)
        try:
            out: NodeRecord | str = NodeRecord.model_validate(self.ray.get(ref))
            self._free(name)
            if self.scorers and needs_scoring(job, out):
                self._score_apart(job, out)
                return None  # the driver may start the freed worker's next node now
        except self.ray.exceptions.RayActorError as err:  # the actor died: a fresh one replaces it
            out = f"its worker was lost ({type(err).__name__}: {str(err).splitlines()[0][:200]})"
            self.actors.pop(name, None)
            self._free(self._new_actor())
        except Exception as err:  # noqa: BLE001 - the node raised (its worker lives on)
            first = str(err).splitlines()[0][:200] if str(err) else ""
            out = f"its worker failed ({type(err).__name__}: {first})"
            self._free(name)
        return job, out

    def _scored(self, ref: Any) -> tuple[NodeJob, NodeRecord | str]:
        job, name = self.scoring.pop(ref)
        try:
            rec = NodeRecord.model_validate(self.ray.get(ref))
            self.scored_by[job.node] = name
            return job, rec
        except Exception as err:  # noqa: BLE001 - a scorer lost: the node is run again (idempotent)
            if isinstance(err, self.ray.exceptions.RayActorError):
                self.scorers[name] = self.score_remote.remote(name)
            first = str(err).splitlines()[0][:200] if str(err) else ""
            return job, f"its scoring failed ({type(err).__name__}: {first})"

    def stop(self) -> None:
        """Cancel what runs (a running node's sandbox command is interrupted and its processes
        ended by the sandbox), then end the actors and, when this process started Ray, Ray."""
        self.running.update(self.scoring)
        self.scoring.clear()
        for ref in list(self.running):
            try:
                self.ray.cancel(ref)
            except Exception:  # noqa: BLE001
                pass
        deadline = time.monotonic() + 10
        while self.running and time.monotonic() < deadline:
            ready, _ = self.ray.wait(list(self.running), num_returns=len(self.running), timeout=0.5)
            for ref in ready:
                self.running.pop(ref, None)
        for actor in (*self.actors.values(), *self.scorers.values()):
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001
                pass
        self.actors.clear()
        self.scorers.clear()
        self.running.clear()
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()
