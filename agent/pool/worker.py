"""One node, start to end, on whichever worker runs it: pure of the driver, so a Ray actor, a
thread or a test can run it alike (:func:`run_node`).

The worker copies the node's starting folder (its first parent's workspace, or the task's
starting one) to the node's own folder under the run, writes the operator's setting into it,
opens **its own sandbox** over that folder (the run's backend, the task's limits with this
worker's share of the cores, so its thread counts are set to that share and two workers do
not fight over the same cores), runs the task's solve scripts with the task's time limit, and
has the harness score the folder on the hidden ``search`` split
(:func:`environments.scoring.hidden.score_split`: a ledger line naming the node). It returns
the node's record; the driver lays the folder into the run's workspace as a step.

CPU seconds are the sandbox processes' own (``getrusage`` of this process's waited children,
``cpu_source = "rusage"``) where this process runs nothing else at the time (a Ray worker);
else, or where the backend's processes are not this process's children (Docker), wall time
times the cores the worker was given (``"wall x cpus"``).
"""

from __future__ import annotations

import os
import resource
import socket
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from agent.baseline import Knob
from agent.pool.operators import Operation, apply_setting
from agent.pool.records import NodeRecord
from agent.pool.scoring import assigned, score_node
from environments.acting.low_level import command_output
from environments.acting.observation import last_lines
from environments.acting.pool_node import node_folder
from environments.record.runs import now
from environments.task.spec import TaskSpec

REASON_CHARS = 600
OUTPUT_CHARS, ERROR_CHARS = 1500, 2000  # a run's last output kept (agent.tree.outcome's sizes)


@dataclass
class NodeJob:
    """Everything a worker needs for one node (picklable: it travels to a Ray actor)."""

    run_path: str
    task: TaskSpec
    sandbox: str
    node: int
    op: Operation
    knobs: list[Knob]
    source: str  # the folder the node starts from
    seed: int = 0
    cpus: float = 1.0  # this worker's share of the cores
    gpus: float = 0.0
    rusage: bool = True  # this process runs one node at a time: its children's CPU time is the node's
    runtime: dict = field(default_factory=dict)  # LABCOAT_PYTHON / LABCOAT_DEVICE of the run
    code: str | None = None  # with a model: the script it wrote, saved as ``script`` in the folder
    script: str = ""
    tool: dict | None = None  # the tool operator's first half: run this tool, no script, no score


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _fail(rec: NodeRecord, reason: str) -> NodeRecord:
    return rec.model_copy(update={"status": "failed", "reason": reason[-REASON_CHARS:]})


def prepare_folder(job: NodeJob) -> Path:
    """The node's folder: a copy of its starting folder (by descriptor, links dropped) with the
    operator's setting written in. Emptied first, so a retried node starts clean."""
    from sandbox.fs import WorkspaceFS, copy_tree

    folder = node_folder(Path(job.run_path), job.node)
    fs = WorkspaceFS(folder)
    if folder.is_dir():
        fs.clear()
    copy_tree(WorkspaceFS(Path(job.source)), fs)
    apply_setting(folder, job.knobs, job.op.base, job.op.setting)
    if job.code is not None:
        fs.write(job.script, [job.code.encode()])
    return folder


def run_node(job: NodeJob, worker: str = "local", *, score: bool = True) -> NodeRecord:
    """Run and score one node; every failure is the node's (said in its record), never raised.
    ``score=False``: run it only, for a scoring actor to score (:mod:`agent.pool.scoring`)."""
    from environments.task.sandboxing import code_mounts, sandbox_limits
    from sandbox import SandboxError, open_sandbox

    began = time.monotonic()
    op = job.op
    rec = NodeRecord(id=job.node, parents=op.parents, operator=op.operator, of=op.of,
                     setting=op.setting, changes=op.changes, worker=worker,
                     host=socket.gethostname(), started_at=now(), cpus=job.cpus)

    def done(r: NodeRecord) -> NodeRecord:
        return r.model_copy(update={"ended_at": now(),
                                    "wall_seconds": round(time.monotonic() - began, 3)})

    for name, value in job.runtime.items():
        if value:
            os.environ[name] = value
    task = job.task
    try:
        folder = prepare_folder(job)
    except Exception as err:  # noqa: BLE001 - a node that cannot be made fails, the pool goes on
        return done(_fail(rec, f"its workspace could not be made: {type(err).__name__}: {err}"))
    try:
        limits = sandbox_limits(task)
        limits = limits.model_copy(update={"cpus": max(1.0, min(limits.cpus, job.cpus))})
        sandbox = open_sandbox(job.sandbox, folder, limits, code_mounts())
    except (SandboxError, OSError, ValueError) as err:
        return done(_fail(rec, f"its sandbox could not be opened: {err}"))
    if job.tool is not None:  # the tool operator's first half (agent.pool.tool_op)
        from agent.pool.tool_op import run_tool_job

        try:
            return done(run_tool_job(rec, sandbox, job.tool, task.limits.exec_timeout))
        finally:
            sandbox.close()
    spent, cpu0 = 0.0, _cpu_children()
    failed = ""
    try:
        for script in task.solve:
            runner = ["bash"] if script.endswith(".sh") else [sandbox.python]
            result = sandbox.exec([*runner, script], timeout=task.limits.exec_timeout,
                                  env={"LABCOAT_SEED": str(job.seed)})
            spent += result.seconds
            output = command_output(result.stdout, result.stderr)
            rec.output = output[-OUTPUT_CHARS:]  # what an improve prompt shows
            if not result.ok:
                rec.output, rec.error = "", output[-ERROR_CHARS:]  # what a fix turn shows
                why = ("timed out after " + f"{task.limits.exec_timeout:g} s" if result.timed_out
                       else "ran out of memory" if result.oom_killed else f"exited with code {result.exit_code}")
                failed = f"{script} {why}: {last_lines(command_output(result.stdout, result.stderr), 400, sep=' | ')}"
                break
    except SandboxError as err:
        failed = f"its sandbox failed: {err}"
    except Exception as err:  # noqa: BLE001
        failed = f"{type(err).__name__}: {err} ({traceback.format_exc(limit=2)[-300:]})"
    finally:
        sandbox.close()
    cpu = _cpu_children() - cpu0
    if job.rusage and job.sandbox != "docker" and (cpu > 0.01 or spent < 0.5):
        rec.cpu_seconds, rec.cpu_source = round(cpu, 3), "rusage"
    else:
        rec.cpu_seconds, rec.cpu_source = round(spent * max(1.0, job.cpus), 3), "wall x cpus"
    rec.sandbox_seconds = round(spent, 3)
    rec.gpu_seconds = round(spent * job.gpus, 3) if job.gpus else None
    if failed:
        return done(_fail(rec, failed))
    return done(score_node(job, rec) if score else rec)  # else a scoring actor scores it


class PoolWorker:
    """The Ray actor: one node at a time (``max_concurrency`` 1), so the children whose CPU
    time it measures are that node's."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, job: NodeJob, score: bool = True) -> dict:
        where = ""
        try:
            import ray

            where = ray.get_runtime_context().get_node_id()[:8]
        except Exception:  # noqa: BLE001 - not on Ray (a test): the name alone
            pass
        return run_node(job, f"{self.name}@{where}" if where else self.name, score=score).model_dump()

    def resources(self) -> dict[str, float]:
        return assigned()
