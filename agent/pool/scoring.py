"""A finished node scored by the harness on the hidden ``search`` split: on the worker that ran
it, or, when the run asks for a device, on a CPU-only scoring actor (:class:`ScoringWorker`).

Scoring is the harness's, never the node's script's: :func:`score_node` evaluates the node's
folder (:func:`environments.scoring.hidden.score_split`) and writes the ledger line naming the
node (actor ``harness``, purpose ``search``, no step), which ``labcoat verify`` matches to the
node's Record Node step wherever the scoring ran.

Why apart for a device: a worker holding a GPU share would otherwise hold it while a CPU-bound
evaluation runs. With ``--device cuda`` the Ray executor (:mod:`agent.pool.executors`) has the
GPU workers only run nodes (``run_node(..., score=False)``) and hands each finished node to a
scoring actor that declares no GPU, so the freed worker gets its next node at once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

from agent.pool.records import NodeRecord
from environments.record.runs import now
from environments.task.spec import TaskSpec

DETAIL_CHARS = 400  # of a failed scoring's public detail, in the node's reason


class NodeJob(Protocol):
    """What scoring reads of :class:`agent.pool.worker.NodeJob` (named here, not imported:
    the worker imports this module)."""

    run_path: str
    task: TaskSpec
    sandbox: str
    node: int
    tool: dict | None
    runtime: dict


def needs_scoring(job: NodeJob, rec: NodeRecord) -> bool:
    """Whether ``rec`` ran its scripts and waits for its search score (a failed node and the
    tool operator's first half are never scored)."""
    return job.tool is None and rec.status == "ok" and rec.search is None and not rec.failure


def _failed(rec: NodeRecord, reason: str) -> NodeRecord:
    return rec.model_copy(update={"status": "failed", "reason": reason})


def score_node(job: NodeJob, rec: NodeRecord) -> NodeRecord:
    """``rec`` with its search score (and the scoring's seconds), or failed with the reason
    when the harness could not score it or the scoring failed; never raises."""
    from environments.acting.pool_node import node_folder
    from environments.scoring.hidden import score_split

    folder = node_folder(Path(job.run_path), job.node)
    t = time.monotonic()
    try:
        result = score_split(job.task, folder, job.sandbox, "search", run_path=Path(job.run_path),
                             actor="harness", purpose="search", shown_to_agent=True, node=job.node)
    except Exception as err:  # noqa: BLE001 - the harness could not score it: the node's failure
        return _failed(rec, f"search scoring could not run: {type(err).__name__}: "
                            f"{str(err)[:DETAIL_CHARS]}")
    rec = rec.model_copy(update={"score_seconds": round(time.monotonic() - t, 3),
                                 "search": result.value, "failure": result.failure})
    if result.value is None:
        return _failed(rec, f"search scoring failed ({result.failure}): "
                            f"{(result.public_detail or '')[-DETAIL_CHARS:]}")
    return rec


def scored_apart(job: NodeJob, rec: NodeRecord) -> NodeRecord:
    """:func:`score_node` on a scoring actor: the node then ends when its scoring does, and its
    wall seconds count the run and the scoring (not the wait between them)."""
    out = score_node(job, rec)
    return out.model_copy(update={"ended_at": now(),
                                  "wall_seconds": round(rec.wall_seconds + out.score_seconds, 3)})


def assigned() -> dict[str, float]:
    """The Ray resources this actor holds (for tests and checks: a scorer holds no GPU)."""
    import ray

    return dict(ray.get_runtime_context().get_assigned_resources())


class ScoringWorker:
    """The Ray actor that scores finished nodes, one at a time; it declares no GPU and no CPU
    (:data:`agent.pool.executors.SCORER_CPUS`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def score(self, job: NodeJob, rec: dict) -> dict:
        from environments.task.sandboxing import DEVICE_ENV, PYTHON_ENV

        if job.runtime.get(PYTHON_ENV):  # the run's --python, as run_node
            os.environ[PYTHON_ENV] = job.runtime[PYTHON_ENV]
        os.environ[DEVICE_ENV] = "cpu"  # it holds no GPU: its sandboxes see none
        return scored_apart(job, NodeRecord.model_validate(rec)).model_dump()

    def resources(self) -> dict[str, float]:
        return assigned()
