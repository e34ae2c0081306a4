"""Importing MLAgentBench's runs: its log folder becomes a labcoat run.

MLAgentBench writes, under a run's ``--log-dir``, ``env_log/trace.json`` (``steps``: each an
``action`` {``name``, ``args``}, its ``observation`` and a ``timestamp``; ``low_level_steps``,
the primitive actions the high-level ones were made of; ``task_description``), a copy of the
workspace after step N in ``env_log/traces/step_N_files`` (N from 0; only the files that are
not read-only), ``traces/step_final_files`` once the agent stopped (what its ``eval.py``
scores), and ``overall_time.txt`` or ``error.txt`` when it ended. An imported run is a run
like any other (``runs/<run_id>/``): step N+1 of its trace is MLAgentBench's step N, its
workspace snapshot is that step's copy with the task's read-only files laid back (a step with no
copy shares the previous step's workspace), and its last step's snapshot is
``step_final_files`` where there is one, so ``labcoat score`` scores what MLAgentBench's
``eval`` scores. ``run.json``'s actor is ``mlab/<agent type>`` and its model
``mlab/<llm name>`` (from the trace's ``args`` where it records them): the run is browsed,
reported, scored and forked as any, and continued only by an actor that is named.

The log is untrusted input. Every file of it is read by descriptor beneath the folder given
(:mod:`sandbox.fs`): a symlink anywhere is never followed, a FIFO never opened;
``trace.json`` is read capped and parsed with a depth cap (:mod:`environments.untrusted.bounded`), then
validated (:class:`MlabTrace`); a step's copy is capped at the task's disk limit. Action
arguments are recorded as data, never acted on, and no code of the log runs: the task is a
suite task the trace names by its plain name, or a folder the person names (``--task``), never
a folder inside the log (:func:`choose_task`). A log that cannot be imported is a
:class:`MlabImportError` naming it, and an import of many goes on with the others.

``mlab.json`` in the run records where it came from (the log's folder and the sha256 of its
``trace.json``): importing the same log again finds that run instead of making another.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from environments.acting.low_level import FINAL_ANSWER
from environments.record.runs import (
    ActorSpec,
    Budgets,
    RunDir,
    RunMeta,
    Step,
    clean,
    new_run_id,
    now,
)
from environments.record.snapshots import skip_note
from environments.reports.records import find_run_dirs
from environments.scoring.evaluate import lay_read_only
from environments.task.spec import TaskError, TaskSpec
from environments.task.suite import SUITE_PREFIX, resolve_task, suite_task_dirs
from environments.untrusted.bounded import LimitError, loads_json
from sandbox.fs import WorkspaceError, WorkspaceFS, copy_tree, is_utf8

__all__ = ["ImportOutcome", "MlabImportError", "MlabTrace", "find_logs", "import_log",
           "import_logs", "parse_trace"]

TRACE = "trace.json"
RECORD = "mlab.json"  # in the imported run: where it came from (the re-import key)
LOW_LEVEL = "mlab_low_level.jsonl"  # in the imported run: the trace's primitive steps
ACTOR = "mlab"
MAX_TRACE_BYTES = 64 << 20  # MLAgentBench's longest runs write a few MB
MAX_TRACE_DEPTH = 32  # its trace nests 5 deep; an action's arguments a little more
MAX_STEPS = 10_000
MAX_NOTE_BYTES = 64 << 10  # error.txt, overall_time.txt
MAX_LOG_DEPTH = 32  # folders walked below LOG_DIR looking for logs
ERROR_PREFIXES = ("EnvError", "Invalid action:", "The action input for")


class MlabImportError(ValueError):
    """A log that cannot be imported; the message names what is wrong with it."""


# ---- MLAgentBench's trace, as its schema.py writes it ------------------------------------------

class MlabAction(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    # a dict normally; MLAgentBench records the text as given when the model's was not JSON
    args: dict[str, Any] | str = Field(default_factory=dict)


class MlabStep(BaseModel):
    model_config = ConfigDict(extra="ignore")

    action: MlabAction
    observation: str = ""
    timestamp: float = 0.0


class MlabTrace(BaseModel):
    """``env_log/trace.json``. ``task`` and ``args`` are read where a trace records them (the
    run's command-line arguments: ``task``, ``agent_type``, ``llm_name``, ``max_steps``...)."""

    model_config = ConfigDict(extra="ignore")

    steps: list[MlabStep] = Field(max_length=MAX_STEPS)
    low_level_steps: list[MlabStep] = Field(default_factory=list, max_length=MAX_STEPS * 10)
    task_description: str = ""
    task: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)

    def arg(self, name: str) -> str | None:
        value = self.args.get(name)
        return value if isinstance(value, str) and value.strip() else None

    @property
    def task_name(self) -> str | None:
        return self.task or self.arg("task")

    @property
    def actor(self) -> str:
        return f"{ACTOR}/{self.arg('agent_type') or 'agent'}"

    @property
    def model(self) -> str | None:
        llm = self.arg("llm_name")
        return f"{ACTOR}/{llm}" if llm else None

    def budgets(self) -> Budgets:
        """MLAgentBench's own limits of the run (``--max-steps``, ``--max-time``), so a fork
        continued as its parent was stops where MLAgentBench would have."""
        limits = {k: self.args.get(k) for k in ("max_steps", "max_time")}
        try:
            return Budgets(**{k: v for k, v in limits.items() if isinstance(v, int) and v >= 1})
        except ValidationError:
            return Budgets()


def parse_trace(data: bytes, what: str = TRACE) -> MlabTrace:
    """MLAgentBench's trace from its bytes, capped and depth-checked before it is parsed."""
    try:
        raw = loads_json(data, max_bytes=MAX_TRACE_BYTES, max_depth=MAX_TRACE_DEPTH, what=what)
    except LimitError as err:
        raise MlabImportError(str(err)) from err
    if not isinstance(raw, dict):
        raise MlabImportError(f"{what} is not MLAgentBench's trace (a JSON object with steps)")
    try:
        return MlabTrace.model_validate(raw)
    except ValidationError as err:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()[:3])
        raise MlabImportError(f"{what} is not MLAgentBench's trace ({where})") from None


# ---- finding and reading logs ------------------------------------------------------------------

def find_logs(folder: Path) -> list[Path]:
    """Every folder beneath ``folder`` (or ``folder`` itself) holding a ``trace.json`` (an
    MLAgentBench ``env_log``), as MLAgentBench's eval finds them, walked by descriptor: a link
    is never followed out, and an ``env_log`` is not searched further (its ``traces/`` hold
    workspace copies). A ``trace.json`` that is not a regular file is still listed, so that
    importing it says why it cannot be read."""
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise MlabImportError(f"{folder}: no such folder")
    fs, found, stack = WorkspaceFS(root), [], [""]
    while stack:
        rel = stack.pop()
        try:
            entries = fs.listdir(rel or ".")
        except WorkspaceError:
            continue
        if any(e.name == TRACE for e in entries):
            found.append(root / rel if rel else root)
            continue
        depth = len(rel.split("/")) if rel else 0
        stack += [f"{rel}/{e.name}" if rel else e.name for e in reversed(entries)
                  if e.kind == "dir" and is_utf8(e.name) and depth < MAX_LOG_DEPTH]
    return sorted(found)


def _read(fs: WorkspaceFS, rel: str, cap: int) -> bytes:
    kind = fs.kind(rel)
    if kind is None:
        raise MlabImportError(f"no {rel} in {fs.root} (an MLAgentBench log holds env_log/{TRACE})")
    if kind != "file":
        raise MlabImportError(f"{rel} is a {kind}, not a regular file: not followed or read")
    try:
        data, size = fs.read(rel, cap + 1)
    except WorkspaceError as err:
        raise MlabImportError(f"{rel}: {err}") from None
    if size > cap or len(data) > cap:
        raise MlabImportError(f"{rel} is larger than {cap} bytes")
    return data


def _note(fs: WorkspaceFS, rel: str) -> str | None:
    """A small text file of the log (error.txt, overall_time.txt), or None where no regular
    file has that name (a link or a FIFO there is not read)."""
    if fs.kind(rel) != "file":
        return None
    try:
        data, _ = fs.read(rel, MAX_NOTE_BYTES)
    except WorkspaceError:
        return None
    return data.decode(errors="replace")


def _as_is(task: TaskSpec) -> TaskSpec:
    return task


# ---- the run -----------------------------------------------------------------------------------

class ImportRecord(BaseModel):
    """``mlab.json`` in an imported run."""

    source: str = Field(description="the log's env_log folder, resolved")
    trace_sha256: str
    task_description: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    overall_time: float | None = None
    error: str | None = None
    low_level_steps: int = 0
    notes: list[str] = Field(default_factory=list)
    imported_at: str = Field(default_factory=now)

    @property
    def key(self) -> tuple[str, str]:
        return self.source, self.trace_sha256


class ImportOutcome(BaseModel):
    """What became of one log (``--json`` prints a list of these)."""

    log: str
    status: Literal["imported", "already", "failed"]
    run_id: str | None = None
    run_dir: str | None = None
    task: str | None = None
    steps: int = 0
    error: str = ""


def imported_runs(runs_dir: Path) -> dict[tuple[str, str], Path]:
    """The runs under ``runs_dir`` imported from MLAgentBench, by (log folder, trace hash)."""
    found = {}
    if not Path(runs_dir).is_dir():
        return found
    for run_dir in find_run_dirs(runs_dir):
        try:
            record = ImportRecord.model_validate_json((run_dir / RECORD).read_bytes())
        except (OSError, ValueError):
            continue  # not an import (or a record damaged by hand: imported again)
        found[record.key] = run_dir
    return found


def _time(ts: float) -> str:
    try:
        return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return now()


def _status(trace: MlabTrace, error: str | None, overall: str | None) -> tuple[str, str]:
    if any(s.action.name == FINAL_ANSWER for s in trace.steps):
        return "finished", "MLAgentBench's agent gave a Final Answer"
    if error:
        return "error", "MLAgentBench's run failed: " + (error.strip().splitlines() or [""])[-1][:300]
    limit = trace.budgets().max_steps
    if limit is not None and len(trace.steps) >= limit:
        return "max_steps", f"reached {limit} steps"
    if overall is not None:
        return "finished", "MLAgentBench's run ended without a Final Answer"
    return "interrupted", "MLAgentBench's run stopped before it ended (no overall_time.txt)"


def _seconds(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _lay_step(fs: WorkspaceFS, rel: str, run: RunDir, task: TaskSpec) -> list[str]:
    """The run's workspace made MLAgentBench's copy ``rel`` with the read-only files laid
    back; notes on what the copy held that a workspace cannot (links, FIFOs)."""
    workspace = WorkspaceFS(run.workspace)
    workspace.clear()
    try:
        walk = copy_tree(fs, workspace, under=rel, max_bytes=task.limits.disk_mb << 20)
    except WorkspaceError as err:
        raise MlabImportError(f"{rel}: {err}") from None
    lay_read_only(task, run.workspace)
    left = [(r, why) for r, why in walk.skipped]
    left += [(r, "it is a symbolic link (not followed)") for r in walk.strays
             if fs.kind(r) == "symlink"]
    return skip_note(left)


def _snapshot_source(fs: WorkspaceFS, i: int, last: bool) -> tuple[str | None, str | None]:
    """(the copy that stands for step ``i``, a note) — the last step's is ``step_final_files``
    where there is one (what MLAgentBench's eval scores)."""
    names = [f"traces/step_{i}_files"]
    if last:
        names.insert(0, "traces/step_final_files")
    for rel in names:
        kind = fs.kind(rel)
        if kind == "dir":
            return rel, None
        if kind is not None:
            return None, f"{rel} is a {kind}, not a folder: not followed; the previous workspace stands"
    if fs.kind("traces") not in (None, "dir"):
        return None, "traces is not a folder: not followed; the previous workspace stands"
    return None, None


def log_root(env_log: Path) -> Path:
    """The log a trace belongs to: MLAgentBench's ``--log-dir`` (the folder holding
    ``env_log/``), or the trace's own folder where it is not named ``env_log``."""
    return env_log.parent if env_log.name == "env_log" else env_log


def choose_task(trace: MlabTrace, task_ref: str | None, logs: tuple[Path, ...]) -> TaskSpec:
    """The task a log is imported with: the one the person named (``--task``, a suite name or a
    folder, as ``labcoat run`` resolves it), else the trace's task if it is a plain suite name.

    The log earns nothing: its task name is never a path (a trace naming
    ``./price-task`` pointed at a folder shipped inside the log, whose ``prepare.py`` labcoat then
    ran), and never a folder beside wherever labcoat runs (``locate_task`` would prefer
    ``./vectorization``); and no folder inside ``logs`` (the log, and the folder given to
    import) is a task, even named by the person, through a link or not: its code came with the
    log."""
    if task_ref is None:
        named = trace.task_name
        if not named:
            raise MlabImportError("the trace names no task: give --task PATH_OR_NAME (the task "
                                  "folder it ran, e.g. MLAgentBench/benchmarks/house-price)")
        suite = [p.name for p in suite_task_dirs()]
        if named not in suite:
            raise MlabImportError(
                f"the trace's task {named!r} is not one of labcoat's suite tasks (a trace may "
                "name a suite task, never a folder: a folder's code would come from the log): "
                "give --task PATH_OR_NAME (the task folder it ran, from outside the log)")
        task_ref = SUITE_PREFIX + named
    try:
        source = resolve_task(task_ref)
    except TaskError as err:
        raise MlabImportError(f"its task does not resolve: {err}") from None
    for log in logs:
        if source.root == log or log in source.root.parents:
            raise MlabImportError(
                f"the task folder {source.root} is inside the log {log}: a task folder that "
                "came with a log is not run (its prepare.py and eval.py are the log's code); "
                "give --task a suite name or a task folder you got elsewhere")
    return source


def import_log(env_log: Path, runs_dir: Path, *, task_ref: str | None = None,
               prepare: Callable[[TaskSpec], TaskSpec] = _as_is, sandbox: str = "local",
               known: dict[tuple[str, str], Path] | None = None,
               within: Path | None = None) -> ImportOutcome:
    """Import one MLAgentBench log (its ``env_log`` folder, or the folder holding it).

    The task is :func:`choose_task`'s (``task_ref``, else the trace's suite task), then
    ``prepare``d (the CLI's runs its ``prepare.py``); the run records the folder it resolved
    to, absolute, so it is resumed and scored from anywhere. ``within`` is the folder the log
    was found in, which no task may come from either. ``known`` is
    :func:`imported_runs` (read once for many logs). Nothing is left in
    ``runs_dir`` unless the whole run was written: it is built in a hidden folder there and
    moved into place last. Raises :class:`MlabImportError` (with :class:`TaskError` for a
    task that does not resolve)."""
    env_log = Path(env_log).expanduser().resolve()
    outer = WorkspaceFS(env_log)  # the folder holding env_log/ (looked at, never followed)
    if outer.kind(TRACE) is None and outer.kind("env_log") == "dir":
        env_log = env_log / "env_log"
    fs = WorkspaceFS(env_log)
    data = _read(fs, TRACE, MAX_TRACE_BYTES)
    trace = parse_trace(data)
    sha = hashlib.sha256(data).hexdigest()
    known = imported_runs(runs_dir) if known is None else known
    if (str(env_log), sha) in known:
        done = known[(str(env_log), sha)]
        return ImportOutcome(log=str(env_log), status="already", run_id=done.name, run_dir=str(done),
                             steps=len(trace.steps))
    logs = (log_root(env_log),) + ((Path(within).resolve(),) if within is not None else ())
    source = choose_task(trace, task_ref, logs)
    task = prepare(source)
    run_dir = _write_run(fs, env_log, trace, sha, task, str(source.root), Path(runs_dir), sandbox)
    known[(str(env_log), sha)] = run_dir
    return ImportOutcome(log=str(env_log), status="imported", run_id=run_dir.name, run_dir=str(run_dir),
                         task=task.name, steps=len(trace.steps))


def _write_run(fs: WorkspaceFS, env_log: Path, trace: MlabTrace, sha: str, task: TaskSpec,
               source: str, runs_dir: Path, sandbox: str) -> Path:
    error, overall = _note(fs, "error.txt"), _note(fs, "overall_time.txt")
    status, reason = _status(trace, error, overall)
    meta = RunMeta(run_id=new_run_id(task.name, ACTOR), task=task.name, task_root=str(task.root),
                   actor=trace.actor, config=ActorSpec(model=trace.model), sandbox=sandbox,
                   budgets=trace.budgets(), task_source=source)
    staging = runs_dir / ".importing"
    run = RunDir.create(staging, meta, task.env_dir)
    try:
        notes = _write_steps(fs, trace, task, run)
        final = next((s for s in trace.steps if s.action.name == FINAL_ANSWER), None)
        if final is not None and isinstance(final.action.args, dict):
            run.meta.final_answer = str(final.action.args.get("final_answer", ""))
        run.meta.totals.seconds = _seconds(overall) or 0.0
        run.meta.created_at = _time(trace.steps[0].timestamp) if trace.steps else now()
        if trace.low_level_steps:
            with (run.path / LOW_LEVEL).open("w") as f:
                for s in trace.low_level_steps:
                    f.write(json.dumps(clean(s.model_dump())) + "\n")
        record = ImportRecord(source=str(env_log), trace_sha256=sha, task_description=trace.task_description,
                              args=trace.args, overall_time=_seconds(overall), error=error,
                              low_level_steps=len(trace.low_level_steps), notes=notes)
        run.write_json(RECORD, record.model_dump())
        run.finish(status, reason)  # type: ignore[arg-type]
        dest = runs_dir / meta.run_id
        run.path.rename(dest)
    except BaseException:
        WorkspaceFS(run.path).remove_root()
        raise
    finally:
        try:
            staging.rmdir()  # once empty (another import may be using it)
        except OSError:
            pass
    return dest


def _write_steps(fs: WorkspaceFS, trace: MlabTrace, task: TaskSpec, run: RunDir) -> list[str]:
    """MLAgentBench's steps as the run's trace, each with its workspace snapshot."""
    notes: list[str] = []
    cap = task.limits.disk_mb << 20
    last = len(trace.steps) - 1
    for i, step in enumerate(trace.steps):
        rel, note = _snapshot_source(fs, i, i == last)
        left = _lay_step(fs, rel, run, task) if rel is not None else []
        manifest = run.snapshot(i + 1, cap_bytes=cap)
        previous = run.snapshots.load(f"{i:05d}")
        said = [n for n in (note, *left, *manifest.notes) if n]
        notes += [f"step {i + 1}: {n}" for n in said]
        args = step.action.args
        run.append(Step(
            index=i + 1, time=_time(step.timestamp), actor=run.meta.actor, action=step.action.name,
            args=args, observation=step.observation,
            error=step.observation.startswith(ERROR_PREFIXES), snapshot=manifest.label,
            changed=manifest.changed_since(previous),
            meta={"mlab_step": i, "mlab_snapshot": rel, **({"notes": said} if said else {})}))
    return notes


def import_logs(folder: Path, runs_dir: Path, *, task_ref: str | None = None,
                prepare: Callable[[TaskSpec], TaskSpec] = _as_is,
                sandbox: str = "local") -> Iterator[ImportOutcome]:
    """Import every log beneath ``folder``, one outcome each as it is done; a log that fails
    is a ``failed`` outcome with its reason, and the others go on."""
    known = imported_runs(runs_dir)
    for log in find_logs(folder):
        try:
            yield import_log(log, runs_dir, task_ref=task_ref, prepare=prepare, sandbox=sandbox,
                             known=known, within=folder)
        except (MlabImportError, TaskError, WorkspaceError) as err:
            yield ImportOutcome(log=str(log), status="failed", error=str(err))
