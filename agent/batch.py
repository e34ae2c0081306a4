"""Batches: every (task, model, seed) combination as its own run, resumable, on K workers or Ray.

A batch lives in one folder::

    BATCH_DIR/batch.json                 the spec and each combination's last known state
    BATCH_DIR/runs/<combo key>/<run_id>/ the combination's run (one per key; deterministic key)
    BATCH_DIR/.retired/<combo key>/...   failed attempts moved aside by --retry-failed

What a combination needs next is read from its run directory, not trusted from the manifest
(a batch killed at any moment leaves the manifest behind the disk): a scored run that ended is
*done* and skipped; a run left ``created``/``running``/``interrupted`` (the batch was stopped)
is resumed in place; a run that ended in ``error``, a combination whose worker raised, and a
run whose scoring hit an infrastructure failure are *failed* and retried only when asked
(``retry_failed``): the old attempt is moved to ``.retired/`` and a fresh run starts. What
failed for the machine's sake, not the actor's, is not started afresh: an infrastructure
failure of scoring alone is just scored again, and a run whose sandbox was lost under it
(``RunMeta.infrastructure``) is resumed from its last recorded step, on another backend when
the batch's ``sandbox`` is ``auto`` and its own is not available now.

:func:`run_combo` is the unit of work (one process runs one combination to its end and scores
it); the executors only decide where it runs: ``local`` (a pool of K worker processes) or
``ray`` (one Ray task per combination, on a local instance or a cluster at ``ray_address``;
the batch folder must then be on a filesystem every node shares).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shlex
import shutil
import time
import traceback
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from agent import replay
from agent.config import ActorConfig
from environments.record.runs import (
    ENDED_STATUSES,
    RESUMABLE_STATUSES,
    Budgets,
    ComboRecord,
    RunMeta,
    now,
)
from environments.record.snapshots import _fsync_write
from environments.scoring.score import Score

MANIFEST = "batch.json"
ENDED, RESUMABLE = ENDED_STATUSES, RESUMABLE_STATUSES  # by their batch names
PASSED_ENV = ("LABCOAT_HOME",)
ComboState = Literal["pending", "done", "resume", "failed", "rescore"]


class BatchSpec(BaseModel):
    """What a batch runs; stored in ``batch.json`` so ``--resume DIR`` needs nothing else.

    ``actor`` is the configuration every run gets (all a single run can set: kind, mode,
    context, fast/edit models, observation cap ...), with ``model`` and ``seed`` set per
    combination from ``models`` and ``seeds``; ``budgets`` are each run's.
    """

    tasks: list[str]
    models: list[str]
    seeds: list[int] = Field(default_factory=lambda: [0])
    actor: ActorConfig = Field(default_factory=ActorConfig)
    budgets: Budgets = Field(default_factory=Budgets)
    sandbox: str = "auto"
    score: bool = True
    baseline_runs: int = Field(3, ge=1, description="runs to measure a task's missing baseline")
    score_points: int | None = Field(
        None, description="also score this many evenly spaced steps (0: every step) for curves")
    method_tools: bool = Field(
        True, description="offer the task's method tools (False: the same task without them, "
        "the control arm of `labcoat uplift`)")

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        """batch.json from before typed configs: ``agent``/``actions`` and the budgets flat."""
        if not isinstance(data, dict) or "actor" in data:
            return data
        data = dict(data)
        data["actor"] = {"kind": data.pop("agent", None), "actions": data.pop("actions", None)}
        data["budgets"] = {k: data.pop(k) for k in list(data) if k in Budgets.model_fields}
        return data

    def config_for(self, model: str, seed: int) -> ActorConfig:
        """The actor configuration of one combination (``replay/FILE`` replays that file)."""
        update: dict[str, Any] = {"model": model, "seed": seed}
        if not self.method_tools:  # the run records it, so a resume outside the batch keeps it
            update["method_tools"] = False
        update.update(replay.model_fields(model))
        return self.actor.model_copy(update=update)


class Combo(BaseModel):
    task: str
    model: str
    seed: int

    @property
    def key(self) -> str:
        return combo_key(self.task, self.model, self.seed)


def _slug(text: str, n: int) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)[:n].strip("-.") or "x"


def combo_key(task: str, model: str, seed: int) -> str:
    """A folder name fixed by the combination (the hash keeps similar model strings apart)."""
    digest = hashlib.sha1(f"{task}\0{model}".encode()).hexdigest()[:6]
    return f"{_slug(Path(task).name, 40)}__{_slug(model, 40)}-{digest}__s{seed}"


def combos(spec: BatchSpec) -> list[Combo]:
    return [Combo(task=t, model=m, seed=s) for t in spec.tasks for m in spec.models for s in spec.seeds]


class BatchManifest(BaseModel):
    """``batch.json``: the spec and each combination's last known state. Every read of the
    file goes through this model (:func:`load_manifest`); reports read its ``combos`` through
    :class:`environments.record.runs.BatchRecords`."""

    spec: BatchSpec
    combos: dict[str, ComboRecord] = Field(default_factory=dict)
    created_at: str = Field(default_factory=now)
    updated_at: str = Field(default_factory=now)


# ---- the batch folder -------------------------------------------------------------------------

def runs_root(batch_dir: Path, key: str) -> Path:
    return Path(batch_dir) / "runs" / key


def find_run(batch_dir: Path, key: str) -> Path | None:
    """The combination's run directory, if it has one (the newest, should there be several)."""
    root = runs_root(batch_dir, key)
    found = sorted(p.parent for p in root.glob("*/run.json")) if root.is_dir() else []
    return found[-1] if found else None


def load_manifest(batch_dir: Path) -> BatchManifest | None:
    path = Path(batch_dir) / MANIFEST
    return BatchManifest.model_validate_json(path.read_text()) if path.is_file() else None


def save_manifest(batch_dir: Path, manifest: BatchManifest) -> None:
    manifest.updated_at = now()
    Path(batch_dir).mkdir(parents=True, exist_ok=True)
    _fsync_write(Path(batch_dir) / MANIFEST, manifest.model_dump_json(indent=2))


def open_batch(batch_dir: Path, spec: BatchSpec | None) -> BatchManifest:
    """The batch's manifest: made from ``spec``, or read back (and checked against ``spec``)."""
    batch_dir = Path(batch_dir)
    manifest = load_manifest(batch_dir)
    if manifest is None:
        if spec is None:
            raise FileNotFoundError(f"{batch_dir}: no {MANIFEST}; not a batch folder")
        manifest = BatchManifest(spec=spec)
    elif spec is not None and spec != manifest.spec:
        raise ValueError(f"{batch_dir} holds a batch with a different spec; resume it with "
                         f"--resume {batch_dir} or choose another --dir")
    for c in combos(manifest.spec):
        manifest.combos.setdefault(c.key, ComboRecord(task=c.task, model=c.model, seed=c.seed))
    save_manifest(batch_dir, manifest)
    return manifest


def _read_meta(run: Path) -> RunMeta | None:
    """The run's ``run.json`` through its model; ``None`` where it is missing or unreadable
    (a batch killed while writing it)."""
    try:
        return RunMeta.model_validate_json((run / "run.json").read_text())
    except (OSError, ValueError):
        return None


def _read_score(run: Path) -> Score | None:
    """The run's ``score.json`` through its model; ``None`` where it is missing or unreadable."""
    try:
        return Score.model_validate_json((run / "score.json").read_text())
    except (OSError, ValueError):
        return None


def _only_scoring_failed(run: Path) -> bool:
    """The run ended and only its scoring hit an infrastructure failure: score it again."""
    meta, score = _read_meta(run), _read_score(run)
    return (meta is not None and meta.status in ENDED and score is not None
            and score.failure == "infrastructure")


def _sandbox_lost(run: Path) -> bool:
    """The run stopped because its sandbox died under it: continue it, do not start afresh."""
    meta = _read_meta(run)
    return meta is not None and meta.status == "error" and meta.infrastructure


def assess(batch_dir: Path, key: str, record: ComboRecord, spec: BatchSpec) -> ComboState:
    """What this combination needs, judged from its run directory."""
    run = find_run(batch_dir, key)
    if run is None:
        return "failed" if record.state == "failed" else "pending"
    meta = _read_meta(run)
    status = meta.status if meta else None
    if status in RESUMABLE:
        return "resume"
    if status not in ENDED:
        return "failed"
    if not spec.score:
        return "done"
    score = _read_score(run)
    if score is None:
        return "rescore"
    return "failed" if score.failure == "infrastructure" else "done"


class Plan(BaseModel):
    todo: list[str]
    done: list[str]
    failed_skipped: list[str]
    retried: list[str]


def plan(batch_dir: Path, manifest: BatchManifest, retry_failed: bool = False) -> Plan:
    todo, done, skipped, retried = [], [], [], []
    for key, record in manifest.combos.items():
        state = assess(batch_dir, key, record, manifest.spec)
        if state == "done":
            done.append(key)
        elif state == "failed":
            (retried if retry_failed else skipped).append(key)
            if retry_failed:
                todo.append(key)
        else:
            todo.append(key)
    return Plan(todo=todo, done=done, failed_skipped=skipped, retried=retried)


# ---- one combination ----------------------------------------------------------------------

def _retire(batch_dir: Path, key: str) -> None:
    root = runs_root(batch_dir, key)
    if root.is_dir() and any(root.iterdir()):
        dest = Path(batch_dir) / ".retired" / key / time.strftime("%Y%m%d-%H%M%S")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(root), str(dest))


class ComboJob(BaseModel):
    """One combination to run, as the executors hand it to a worker process or Ray task."""

    batch_dir: str
    key: str
    task: str
    model: str
    seed: int
    spec: BatchSpec
    retry: bool = Field(False, description="start afresh instead of continuing a failed attempt")
    env: dict[str, str] = Field(default_factory=dict, description="variables to set in the worker")


class ComboResult(BaseModel):
    """What became of one combination; :func:`run_combo` returns one, never raises."""

    key: str
    ok: bool = False
    lost: bool = Field(False, description="its worker or node died: still pending, run again on resume")
    pid: int | None = None
    host: str | None = None
    node: str | None = Field(None, description="the Ray node that ran it")
    run_dir: str | None = None
    status: str | None = None
    reason: str | None = None
    cost: float = 0.0
    tokens: int = 0
    improvement: float | None = None
    success: bool | None = None
    failure: str | None = None
    error: str | None = None
    note: str | None = Field(None, description="what the batch should say of it (a run resumed "
                             "on another sandbox backend)")
    seconds: float = 0.0


def run_combo(job: ComboJob) -> ComboResult:
    """Run one combination to its end and score it; never raises (errors come back as data)."""
    os.environ.update(job.env)
    from agent import session
    from agent.runner import without_method_tools

    batch_dir, key, spec = Path(job.batch_dir), job.key, job.spec
    out = ComboResult(key=key, pid=os.getpid(), host=os.uname().nodename)
    start = time.perf_counter()
    try:
        existing = find_run(batch_dir, key)
        if (existing is not None and job.retry and not _only_scoring_failed(existing)
                and not _sandbox_lost(existing)):
            _retire(batch_dir, key)  # (a run whose scoring alone failed is scored again below)
            existing = None
        if existing is not None:
            begun = session.resume(existing, sandbox=spec.sandbox)
            out.note = begun.note
        else:
            begun = session.start(job.task, spec.config_for(job.model, job.seed), spec.budgets,
                                  runs_root(batch_dir, key), sandbox=spec.sandbox, batch=str(batch_dir))
        run = begun.run
        if not spec.method_tools:  # a run recorded before its config said so
            begun.task = without_method_tools(begun.task)
        if run.meta.status not in ENDED:
            begun.drive()
        t = run.meta.totals
        out = out.model_copy(update=dict(run_dir=str(run.path), status=run.meta.status,
                                         reason=run.meta.status_reason, cost=t.cost,
                                         tokens=t.tokens_in + t.tokens_out))
        if spec.score and run.meta.status in ENDED:
            s = session.score(run, every_step=spec.score_points is not None,
                              points=spec.score_points or None, baseline_runs=spec.baseline_runs)[-1]
            out = out.model_copy(update=dict(improvement=s.improvement, success=s.success,
                                             failure=s.failure))
        out.ok = run.meta.status in ENDED and out.failure != "infrastructure"
    except Exception as err:  # noqa: BLE001 - one combination's failure must not stop the batch
        out.ok = False
        out.error = f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=5)}"
    out.seconds = round(time.perf_counter() - start, 3)
    return out


# ---- executors --------------------------------------------------------------------------------

class Progress(BaseModel):
    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    pending: int = 0
    cost: float = 0.0


def _cost_so_far(batch_dir: Path, keys: list[str]) -> float:
    total = 0.0
    for key in keys:
        run = find_run(batch_dir, key)
        meta = _read_meta(run) if run else None
        if meta:
            total += meta.totals.cost
    return total


class BatchResult(BaseModel):
    batch_dir: str
    total: int
    done: int
    failed: int
    skipped_failed: int
    ran: int
    lost: int = 0  # their worker or node died: still pending, run again on resume
    seconds: float
    cost: float
    results: list[ComboResult]
    resume_command: str


def resume_command(batch_dir: Path, retry_failed: bool = False, jobs: int | None = None,
                   executor: str | None = None, ray_address: str | None = None) -> str:
    parts = ["labcoat", "batch", "--resume", str(batch_dir)]
    if jobs:
        parts += ["--jobs", str(jobs)]
    if executor and executor != "local":
        parts += ["--executor", executor]
    if ray_address:
        parts += ["--ray-address", ray_address]
    if retry_failed:
        parts.append("--retry-failed")
    return shlex.join(parts)


def _local_executor(jobs: list[ComboJob], workers: int, on_result: Callable[[ComboResult], None],
                    tick: Callable[[int], None]) -> None:
    ctx = multiprocessing.get_context("spawn")  # no fork of a threaded parent (progress bars)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(run_combo, job): job for job in jobs}
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for f in finished:
                    job = futures[f]
                    try:
                        on_result(f.result())
                    except Exception as err:  # noqa: BLE001 - a worker process died
                        on_result(ComboResult(key=job.key, lost=True,
                                              error=f"worker failed: {type(err).__name__}: {err}"))
                tick(min(workers, len(pending)))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _run_combo_on_ray(job: ComboJob) -> ComboResult:
    """:func:`run_combo`, noting which Ray node ran it (nodes of one machine share a host name)."""
    import ray

    out = run_combo(job)
    out.node = ray.get_runtime_context().get_node_id()
    return out


def _ray_executor(jobs: list[ComboJob], workers: int, on_result: Callable[[ComboResult], None],
                  tick: Callable[[int], None], address: str | None) -> None:
    try:
        import ray
    except ImportError as err:
        raise RuntimeError("--executor ray needs Ray: pip install 'labcoat[ray]'") from err
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     object_store_memory=80 * 1024 * 1024, configure_logging=False)
    refs: dict = {}
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_run_combo_on_ray)
        refs = {remote.remote(job): job for job in jobs}
        while refs:
            finished, _ = ray.wait(list(refs), num_returns=1, timeout=1.0)
            for ref in finished:
                job = refs.pop(ref)
                try:
                    on_result(ray.get(ref))
                except Exception as err:  # noqa: BLE001 - a Ray worker or node died
                    on_result(ComboResult(key=job.key, lost=True,
                                          error=f"ray task failed: {type(err).__name__}: {err}"))
            tick(min(workers, len(refs)))
    except BaseException:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()


def ensure_baselines(spec: BatchSpec, on_measure: Callable[[str], None] | None = None) -> dict[str, float]:
    """Every task's baseline, measured now (``baseline_runs`` times) and stored where none is known.

    Without a baseline no run of the task could have an improvement, so this happens once,
    before any run, rather than leaving a whole batch unscorable.
    """
    from environments.scoring.baselines import ensure_baseline
    from environments.task.prepare import prepare_task
    from environments.task.suite import resolve_task

    return {name: ensure_baseline(prepare_task(resolve_task(name), sandbox=spec.sandbox),
                                  runs=spec.baseline_runs, sandbox=spec.sandbox,
                                  on_measure=on_measure)
            for name in spec.tasks}


def run_batch(batch_dir: str | Path, spec: BatchSpec | None = None, *, jobs: int = 1,
              executor: str = "local", ray_address: str | None = None, retry_failed: bool = False,
              on_progress: Callable[[Progress], None] | None = None,
              on_measure: Callable[[str], None] | None = None) -> BatchResult:
    """Run (or resume) a batch; ``spec`` may be left out to resume what ``batch_dir`` holds."""
    batch_dir = Path(batch_dir).resolve()
    manifest = open_batch(batch_dir, spec)
    spec = manifest.spec
    p = plan(batch_dir, manifest, retry_failed)
    if spec.score and p.todo:
        ensure_baselines(spec, on_measure)
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    job_list = []
    for key in p.todo:
        r = manifest.combos[key]
        job_list.append(ComboJob(batch_dir=str(batch_dir), key=key, task=r.task, model=r.model,
                                 seed=r.seed, spec=spec, retry=key in p.retried, env=env))
        r.attempts += 1
        r.state = "running"
    save_manifest(batch_dir, manifest)
    progress = Progress(total=len(manifest.combos), done=len(p.done), failed=len(p.failed_skipped),
                        pending=len(job_list))
    results: list[ComboResult] = []
    lost: list[str] = []
    start = time.perf_counter()
    last_cost = [0.0]

    def tick(running: int) -> None:
        progress.running = running
        progress.pending = len(job_list) - len(results) - running
        if time.perf_counter() - last_cost[0] > 2.0 or running == 0:
            progress.cost = _cost_so_far(batch_dir, list(manifest.combos))
            last_cost[0] = time.perf_counter()
        if on_progress:
            on_progress(progress)

    def on_result(res: ComboResult) -> None:
        results.append(res)
        r = manifest.combos[res.key]
        r.run_dir = res.run_dir or r.run_dir
        r.status = res.status or r.status
        r.error = res.error
        r.improvement, r.success, r.failure = res.improvement, res.success, res.failure
        r.cost, r.tokens = res.cost, res.tokens
        # A combination whose worker (or Ray node) died did not fail: nothing of it ran to an
        # end, so resuming runs it again (its run directory, if any, is resumed in place).
        r.state = "done" if res.ok else "pending" if res.lost else "failed"
        r.updated_at = now()
        save_manifest(batch_dir, manifest)
        if res.ok:
            progress.done += 1
        elif res.lost:
            lost.append(res.key)
        else:
            progress.failed += 1

    tick(0)
    if job_list:
        workers = max(1, min(jobs, len(job_list)))
        if executor == "local":
            _local_executor(job_list, workers, on_result, tick)
        elif executor == "ray":
            _ray_executor(job_list, workers, on_result, tick, ray_address)
        else:
            raise ValueError(f"unknown executor {executor!r} (local or ray)")
    tick(0)
    return BatchResult(
        batch_dir=str(batch_dir), total=progress.total, done=progress.done, failed=progress.failed,
        skipped_failed=len(p.failed_skipped), ran=len(results), lost=len(lost),
        seconds=round(time.perf_counter() - start, 3), cost=progress.cost, results=results,
        resume_command=resume_command(batch_dir, retry_failed=progress.failed > 0),
    )
