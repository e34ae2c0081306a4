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
``eval`` scores. The trace records neither the task's name nor the run's arguments: those
come from the log folder around it (``LOG_DIR/log``'s ``Namespace`` line, ``agent_log/``:
:mod:`.mlab_record`), so ``run.json``'s actor is ``mlab/<agent type>``, its model
``mlab/<llm name>``, its budgets MLAgentBench's limits and its status how MLAgentBench's run
ended. MLAgentBench's undo store (``backup/``) becomes the run's backups
(:mod:`.mlab_backups`). The run is browsed, reported, scored and forked as any; it is a record,
never continued in place (:func:`refuse_resume`), and a fork is continued only by an actor
that is named.

The log is untrusted input. Every file of it is read by descriptor beneath the folder given
(:mod:`sandbox.fs`): a symlink anywhere is never followed, a FIFO never opened;
``trace.json`` is read capped and parsed with a depth cap (:mod:`environments.untrusted.bounded`), then
validated (:class:`MlabTrace`); a step's copy is capped at the task's disk limit. Action
arguments are recorded as data, never acted on, and no code of the log runs: the task is a
suite task the log names by its plain name (whose research problem is the trace's), or a
folder the person names (``--task``), never a folder inside the log (:func:`choose_task`). A log that cannot be imported is a
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
from environments.imports.mlab_backups import UNDO_DIR, replay, undo_store
from environments.imports.mlab_record import final_message, read_log, recorded_args
from environments.record.backups import Backups
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
    """``env_log/trace.json``: the steps and the research problem. MLAgentBench writes neither
    the task's name nor the run's arguments here (:class:`MlabArgs` reads them)."""

    model_config = ConfigDict(extra="ignore")

    steps: list[MlabStep] = Field(max_length=MAX_STEPS)
    low_level_steps: list[MlabStep] = Field(default_factory=list, max_length=MAX_STEPS * 10)
    task_description: str = ""


class MlabArgs(BaseModel):
    """The run's arguments (``runner.py``'s ``--task``, ``--agent-type``, ``--llm-name``,
    ``--max-steps``...) as its log folder records them (:mod:`.mlab_record`), and where."""

    args: dict[str, Any] = Field(default_factory=dict)
    read_from: list[str] = Field(default_factory=list)
    final_message: str | None = None

    def arg(self, name: str) -> str | None:
        value = self.args.get(name)
        return value if isinstance(value, str) and value.strip() else None

    @property
    def task_name(self) -> str | None:
        return self.arg("task")

    @property
    def actor(self) -> str:
        return f"{ACTOR}/{self.arg('agent_type') or 'agent'}"

    def _model(self, name: str) -> str | None:
        llm = self.arg(name)
        return f"{ACTOR}/{llm}" if llm else None

    @property
    def model(self) -> str | None:
        """The agent's LLM: none for the plain ``Agent`` (``baseline.sh``), which calls none."""
        return None if self.arg("agent_type") == "Agent" else self._model("llm_name")

    @property
    def edit_model(self) -> str | None:
        return None if self.arg("agent_type") == "Agent" else self._model("edit_script_llm_name")

    def budgets(self) -> Budgets:
        """MLAgentBench's own limits of the run (``--max-steps``, ``--max-time``), so a fork
        continued as its parent was stops where MLAgentBench would have."""
        limits = {k: self.args.get(k) for k in ("max_steps", "max_time")}
        try:
            return Budgets(**{k: v for k, v in limits.items()
                              if isinstance(v, int) and not isinstance(v, bool) and v >= 1})
        except ValidationError:
            return Budgets()


def read_args(log: WorkspaceFS | None) -> MlabArgs:
    """What the log folder ``log`` (MLAgentBench's ``--log-dir``) records of the run."""
    text = read_log(log) if log is not None else None
    args, where = recorded_args(log, text)
    return MlabArgs(args=args, read_from=where, final_message=final_message(text))


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
    args_from: list[str] = Field(default_factory=list, description="where the args were read")
    final_message: str | None = Field(None, description="what the agent's run returned")
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


def _status(trace: MlabTrace, rec: MlabArgs, error: str | None,
            overall: float | None) -> tuple[str, str]:
    """How MLAgentBench's run ended, as its ``Environment.is_final`` and runner decide it: a
    Final Answer, its step or time limit (``--max-steps``, ``--max-time``), the agent's own
    end (``Final message:``), a crash (``error.txt``), or no end written (killed)."""
    budgets = rec.budgets()
    if any(s.action.name == FINAL_ANSWER for s in trace.steps):
        return "finished", "MLAgentBench's agent gave a Final Answer"
    if error and "TimeoutException" in error:
        return "max_time", f"MLAgentBench's time limit ran out ({_limit(budgets.max_time)})"
    if error:
        return "error", "MLAgentBench's run failed: " + (error.strip().splitlines() or [""])[-1][:300]
    if budgets.max_steps is not None and len(trace.steps) >= budgets.max_steps:
        return "max_steps", f"reached MLAgentBench's limit of {budgets.max_steps} steps (--max-steps)"
    if budgets.max_time is not None and overall is not None and overall >= budgets.max_time:
        return "max_time", f"ran {overall:.0f} s of MLAgentBench's {budgets.max_time:g} s (--max-time)"
    if overall is None:
        return "interrupted", "MLAgentBench's run stopped before it ended (no overall_time.txt)"
    said = rec.final_message or ""
    if said.startswith("No valid response"):
        return "error", f"MLAgentBench's agent gave up: {said}"
    if "agent max steps" in said:
        return "max_steps", f"MLAgentBench's agent reached its own step limit (--agent-max-steps): {said}"
    return "finished", "MLAgentBench's run ended without a Final Answer" + (f" ({said})" if said else "")


def _limit(seconds: float | None) -> str:
    return f"--max-time {seconds:g} s" if seconds is not None else "--max-time"


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


def _folded(text: str) -> str:
    return " ".join(text.split())


def _short(text: str, n: int = 90) -> str:
    text = _folded(text)
    return text if len(text) <= n else text[:n - 1] + "…"


def _is_suite(task: TaskSpec) -> bool:
    return task.root.resolve() in {p.resolve() for p in suite_task_dirs()}


def _suite_by_problem(problem: str) -> str | None:
    """The suite task whose research problem is ``problem`` (whitespace folded), if one is."""
    if not problem:
        return None
    for folder in suite_task_dirs():
        try:
            text = (folder / "scripts" / "research_problem.txt").read_text(errors="replace")
        except OSError:
            continue
        if _folded(text) == problem:
            return folder.name
    return None


def choose_task(trace: MlabTrace, task_ref: str | None, logs: tuple[Path, ...],
                named: str | None = None) -> TaskSpec:
    """The task a log is imported with: the one the person named (``--task``, a suite name or a
    folder, as ``labcoat run`` resolves it), else ``named`` (the ``--task`` MLAgentBench's
    runner was given, :class:`MlabArgs`) if it is a plain suite name, else the suite task whose
    research problem is the trace's.

    A suite task is only ever the log's task when its research problem is the one the trace
    records: MLAgentBench's ``house-price`` is not labcoat's ``house-price`` (other data, other
    ids), and binding them would fail only at scoring. A folder the person names is theirs to
    name (MLAgentBench's ``tasks.json`` may give a folder another problem):
    :func:`problem_note` records a difference.

    The log earns nothing: its task name is never a path (a trace naming
    ``./price-task`` pointed at a folder shipped inside the log, whose ``prepare.py`` labcoat then
    ran), and never a folder beside wherever labcoat runs (``locate_task`` would prefer
    ``./vectorization``); and no folder inside ``logs`` (the log, and the folder given to
    import) is a task, even named by the person, through a link or not: its code came with the
    log."""
    problem = _folded(trace.task_description)
    if task_ref is None:
        suite = [p.name for p in suite_task_dirs()]
        if not named:
            named = _suite_by_problem(problem)
            if named is None:
                raise MlabImportError("the log names no task (no LOG_DIR/log or agent_log with the "
                                      "run's arguments) and no suite task has its research problem: "
                                      "give --task PATH_OR_NAME (the task folder it ran, e.g. "
                                      "MLAgentBench/benchmarks/house-price)")
        if named not in suite:
            raise MlabImportError(
                f"the log's task {named!r} is not one of labcoat's suite tasks (a log may "
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
    if problem and _is_suite(source) and _folded(source.research_problem) != problem:
        ran = f"MLAgentBench's {named!r}" if named else "its task"
        raise MlabImportError(
            f"the log ran {ran}, whose research problem is \"{_short(problem)}\"; labcoat's "
            f"suite task {source.name!r} is another task (\"{_short(source.research_problem)}\"), "
            "with other data: give --task the MLAgentBench task folder the log ran (e.g. "
            f"MLAgentBench/benchmarks/{named or source.name})")
    return source


def problem_note(trace: MlabTrace, task: TaskSpec) -> str | None:
    """A note where the trace's research problem is not the task folder's."""
    problem = _folded(trace.task_description)
    if problem and _folded(task.research_problem) != problem:
        return (f"the log's research problem (\"{_short(problem)}\") is not the task folder's "
                f"(\"{_short(task.research_problem)}\")")
    return None


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
    root = log_root(env_log)
    rec = read_args(WorkspaceFS(root) if root != env_log else None)
    logs = (root,) + ((Path(within).resolve(),) if within is not None else ())
    source = choose_task(trace, task_ref, logs, named=rec.task_name)
    task = prepare(source)
    note = problem_note(trace, task)
    run_dir = _write_run(fs, env_log, trace, rec, sha, task, str(source.root), Path(runs_dir),
                         sandbox, [note] if note else [])
    known[(str(env_log), sha)] = run_dir
    return ImportOutcome(log=str(env_log), status="imported", run_id=run_dir.name, run_dir=str(run_dir),
                         task=task.name, steps=len(trace.steps))


def _final_answer(trace: MlabTrace) -> str | None:
    """The Final Answer's text: its ``final_answer`` argument, or the string the plain
    ``Agent`` gives (``Action("Final Answer", "Done!")``)."""
    final = next((s for s in trace.steps if s.action.name == FINAL_ANSWER), None)
    if final is None:
        return None
    args = final.action.args
    return args if isinstance(args, str) else str(args.get("final_answer", ""))


def _clock(trace: MlabTrace, overall: float | None) -> tuple[float | None, float | None]:
    """(when MLAgentBench's run began, when it ended), as epoch seconds where the log says.
    ``overall_time.txt`` is written as the run ends, just after its last step: the run began
    ``overall`` seconds before that."""
    if not trace.steps:
        return None, None
    last = trace.steps[-1].timestamp
    if overall is None:
        return None, last
    return min(last - overall, trace.steps[0].timestamp), last


def _write_run(fs: WorkspaceFS, env_log: Path, trace: MlabTrace, rec: MlabArgs, sha: str,
               task: TaskSpec, source: str, runs_dir: Path, sandbox: str, notes: list[str]) -> Path:
    error, overall_text = _note(fs, "error.txt"), _note(fs, "overall_time.txt")
    overall = _seconds(overall_text)
    status, reason = _status(trace, rec, error, overall)
    config = ActorSpec(model=rec.model, **({"edit_model": rec.edit_model} if rec.edit_model else {}))
    meta = RunMeta(run_id=new_run_id(task.name, ACTOR), task=task.name, task_root=str(task.root),
                   actor=rec.actor, config=config, sandbox=sandbox,
                   budgets=rec.budgets(), task_source=source)
    staging = runs_dir / ".importing"
    run = RunDir.create(staging, meta, task.env_dir)
    began, ended = _clock(trace, overall)
    try:
        notes = notes + _write_steps(fs, trace, task, run, began)
        run.meta.final_answer = _final_answer(trace)
        run.meta.totals.seconds = overall or 0.0
        run.meta.created_at = _time(began if began is not None else trace.steps[0].timestamp) \
            if trace.steps else now()
        if trace.low_level_steps:
            with (run.path / LOW_LEVEL).open("w") as f:
                for s in trace.low_level_steps:
                    f.write(json.dumps(clean(s.model_dump())) + "\n")
        record = ImportRecord(source=str(env_log), trace_sha256=sha, task_description=trace.task_description,
                              args=rec.args, args_from=rec.read_from, final_message=rec.final_message,
                              overall_time=overall, error=error,
                              low_level_steps=len(trace.low_level_steps), notes=notes)
        run.write_json(RECORD, record.model_dump())
        run.finish(status, reason)  # type: ignore[arg-type]
        if ended is not None:  # when MLAgentBench's run ended, not when it was imported
            run.meta.finished_at = _time(ended)
            run.save_meta()
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


def _write_steps(fs: WorkspaceFS, trace: MlabTrace, task: TaskSpec, run: RunDir,
                 began: float | None) -> list[str]:
    """MLAgentBench's steps as the run's trace, each with its workspace snapshot (without
    MLAgentBench's undo store, replayed into the run's backups: :mod:`.mlab_backups`) and
    its seconds (from the step before's timestamp; the first from when the run began)."""
    notes: list[str] = []
    cap = task.limits.disk_mb << 20
    last = len(trace.steps) - 1
    backups = Backups(run.backups_dir, trace=run.trace_path)
    store: dict[str, str] = {}
    before = began
    for i, step in enumerate(trace.steps):
        rel, note = _snapshot_source(fs, i, i == last)
        left = _lay_step(fs, rel, run, task) if rel is not None else []
        undo_notes: list[str] = []
        if rel is not None:
            now_store = undo_store(fs, rel)
            undo_notes = replay(backups, fs, rel, store, now_store)
            store = now_store
            if WorkspaceFS(run.workspace).kind(UNDO_DIR) == "dir" and not task.env_dir.joinpath(UNDO_DIR).exists():
                WorkspaceFS(run.workspace).remove_tree(UNDO_DIR)
        manifest = run.snapshot(i + 1, cap_bytes=cap)
        previous = run.snapshots.load(f"{i:05d}")
        said = [n for n in (note, *left, *undo_notes, *manifest.notes) if n]
        notes += [f"step {i + 1}: {n}" for n in said]
        seconds = max(step.timestamp - before, 0.0) if before is not None else 0.0
        before = step.timestamp
        run.append(Step(
            index=i + 1, time=_time(step.timestamp), actor=run.meta.actor, action=step.action.name,
            args=step.action.args, observation=step.observation, seconds=round(seconds, 3),
            error=step.observation.startswith(ERROR_PREFIXES), snapshot=manifest.label,
            changed=manifest.changed_since(previous),
            meta={"mlab_step": i, "mlab_snapshot": rel, **({"notes": said} if said else {})}))
    return notes


class ImportedRunError(ValueError):
    """An imported run asked to be continued in place (``labcoat run --resume``)."""


def is_imported(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a run imported from MLAgentBench (it holds ``mlab.json``)."""
    return (Path(run_dir) / RECORD).is_file()


def fork_command(run: RunDir) -> str:
    """The command that continues the imported ``run`` as a new run: a fork at its last
    step (the one before its Final Answer, after which nothing continues)."""
    steps = run.steps()
    at = len(steps) - (1 if steps and steps[-1].action == FINAL_ANSWER else 0)
    limit = {"max_steps": " --max-steps N", "max_time": " --max-time SECONDS"}.get(run.meta.status, "")
    more = f" (it stopped at MLAgentBench's limit, which a fork keeps: raise it with{limit})" if limit else ""
    return f"labcoat run --fork {run.path} --at {at} --model PROVIDER/MODEL{more}"


def refuse_resume(run: RunDir) -> None:
    """An imported run is a record of what MLAgentBench's agent did, never a draft: steps
    appended to it, its answer and status replaced, would be credited to MLAgentBench's agent
    (its ``run.json`` names it) and the log would read as imported already. Raises
    :class:`ImportedRunError` with the fork that continues it as a new run instead."""
    if is_imported(run.path):
        raise ImportedRunError(
            f"{run.path.name} is MLAgentBench's run ({run.meta.actor}), imported: a record, not "
            f"continued in place. Continue it as a new run with the actor you name: {fork_command(run)}")


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
