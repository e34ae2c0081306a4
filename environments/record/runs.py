"""Run records: ``run.json``, an append-only ``trace.jsonl``, snapshots and the workspace.

The trace is the source of truth and is written so that a run killed at any instant (even by
SIGKILL) can be loaded, scored and resumed: each step's snapshot is taken before its trace line,
each line is flushed and fsynced, and a torn last line is ignored (and trimmed) on load. Text
that UTF-8 cannot hold (a lone surrogate in a model reply or an action argument) is escaped at
this boundary (:func:`dump_json`), so writing a record never fails.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializeAsAny,
    ValidationError,
    computed_field,
    model_validator,
)
from pydantic_core import PydanticSerializationError

from environments.record.manifest import RunManifest
from environments.record.snapshots import Manifest, SnapshotStore, _fsync_write
from environments.task.sandboxing import Runtime
from environments.task.spec import TaskSpec
from sandbox.fs import WorkspaceError, WorkspaceFS, copy_tree

BudgetStatus = Literal["max_steps", "max_time", "max_tokens", "max_cost"]
RunStatus = Literal["created", "running", "finished", "error", "interrupted", BudgetStatus,
                    "unknown"]
#: what this version writes; ``unknown`` is only ever read (:func:`read_meta`, ``newer_ok``)
KNOWN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus)) - {"unknown"}
#: a budget ran out (the status is the budget's name): the run ended, cleanly
BUDGET_STATUSES: frozenset[str] = frozenset(get_args(BudgetStatus))
#: the run ended by itself (a Final Answer, its actor stopping, a budget): it can be scored
ENDED_STATUSES: frozenset[str] = frozenset({"finished", *BUDGET_STATUSES})
#: the run was stopped (or never ended): ``labcoat run --resume`` continues it
RESUMABLE_STATUSES: frozenset[str] = frozenset({"created", "running", "interrupted"})
INITIAL = "00000"
FINAL_ANSWER = "Final Answer"
"""The action that ends a run with an answer (the trace's name for it, and the action's)."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Totals(BaseModel):
    steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    llm_calls: int = 0
    retries: int = 0


class Budgets(BaseModel):
    """Limits on a run; hitting one ends it cleanly with that reason as its status.

    The one home of the budget names: the CLI flags, the TUI form, ``BatchSpec`` and
    ``run.json``'s ``limits`` are all this model. Item access (``limits["max_steps"]``) is kept
    because generic views read budgets by name.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    max_steps: int | None = Field(None, ge=1, description="actions the actor may take")
    max_time: float | None = Field(None, gt=0, description="seconds of the run's wall clock, "
                                   "pauses in the TUI not counted")
    max_tokens: int | None = Field(None, ge=1, description="input + output tokens")
    max_cost: float | None = Field(None, gt=0, description="US dollars")

    def get(self, name: str, default: Any = None) -> Any:
        value = getattr(self, name, None)
        return default if value is None else value

    def __getitem__(self, name: str) -> Any:
        if name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)

    def __setitem__(self, name: str, value: Any) -> None:
        if name not in type(self).model_fields:
            raise KeyError(name)
        setattr(self, name, value)

    def left(self, totals: Totals, seconds: float | None = None) -> BudgetsLeft:
        """What is left of each budget set, never below 0, after ``totals`` (``seconds``: the
        run's time now, when it runs on past ``totals.seconds``)."""
        t = totals
        used = {"max_steps": t.steps, "max_time": t.seconds if seconds is None else seconds,
                "max_tokens": t.tokens_in + t.tokens_out, "max_cost": t.cost}
        return BudgetsLeft(**{name: None if (limit := getattr(self, name)) is None
                              else max(limit - used[name], 0) for name in used})

    def out_of_time(self, elapsed: float) -> tuple[RunStatus, str] | None:
        if self.max_time is not None and elapsed >= self.max_time:
            return "max_time", f"used {elapsed:.0f} s of {self.max_time:g} s"
        return None

    def exhausted(self, totals: Totals, elapsed: float) -> tuple[RunStatus, str] | None:
        t = totals
        if self.max_steps is not None and t.steps >= self.max_steps:
            return "max_steps", f"reached {self.max_steps} steps"
        if (hit := self.out_of_time(elapsed)) is not None:
            return hit
        if self.max_tokens is not None and t.tokens_in + t.tokens_out >= self.max_tokens:
            return "max_tokens", f"used {t.tokens_in + t.tokens_out} of {self.max_tokens} tokens"
        if self.max_cost is not None and t.cost >= self.max_cost:
            return "max_cost", f"spent ${t.cost:.4f} of ${self.max_cost:g}"
        return None


class BudgetsLeft(BaseModel):
    """What is left of each budget (:meth:`Budgets.left`), by the budget's name; ``None``: that
    budget is not set (no limit)."""

    max_steps: int | None = None
    max_time: float | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


class ActorSpec(BaseModel):
    """What every run records of its actor, whoever drives it: the part reports and manifests
    read. The agent side (``agent.config.ActorConfig``) extends it with the agent's own knobs;
    ``RunMeta.config`` stores the whole extended object (``SerializeAsAny``) and keeps the
    extra fields on load (``extra="allow"``), so ``environments/`` never imports ``agent/``
    and ``ActorConfig.model_validate(meta.config.model_dump())`` restores it exactly."""

    model_config = ConfigDict(extra="allow")

    kind: str | None = Field(None, description="research | baseline | langchain | replay (human in "
                             "the TUI); default: research when a provider key is set, else baseline")
    model: str | None = Field(None, description="provider/model: openai/…, anthropic/…, llamacpp/…, "
                              "langchain/mod:Class, scripted/FILE, baseline/hparam")
    seed: int = Field(0, description="the actor's and the task's randomness")


class ForkOrigin(BaseModel):
    """Where a forked run came from (``labcoat run --fork RUN_DIR --at K``).

    The fork's first ``step`` trace lines are the parent's, copied with ``Step.inherited``
    set, and its workspace started as the parent's step-``step`` snapshot; ``inherited`` is
    what that prefix had used. The fork's ``totals`` start from it, so budgets hold for the
    whole episode (a fork continued like its parent stops where its parent stopped) and the
    share that is not the fork's own stays visible.
    """

    parent: str = Field(description="the parent's run id")
    parent_dir: str = Field(description="the parent's run directory when the fork was made")
    step: int = Field(ge=0, description="the last step taken over from the parent (0: none)")
    inherited: Totals = Field(default_factory=Totals, description="the prefix's steps, tokens, "
                              "cost and seconds (model calls and actions of steps 1..step)")


class ForkRecord(BaseModel):
    """One line of a parent's ``forks.jsonl``: a child made from it, so a run's family is
    found from the run itself wherever its forks were written."""

    run_id: str
    path: str
    step: int
    created_at: str = Field(default_factory=now)


class SandboxEvent(BaseModel):
    """Something that happened to a run's sandbox and not by its actor's doing (written by
    ``agent.runner.drive`` and ``agent.session.resume``)."""

    kind: Literal["lost", "switched"] = Field(description="lost: it died under a command "
                                              "(``sandbox.base.SandboxLost``); switched: the run "
                                              "continued on another backend")
    backend: str = Field(description="lost: the backend that died; switched: the new one")
    previous: str | None = Field(None, description="switched: the backend it left")
    step: int = Field(description="the run's last recorded step then (a lost step is not recorded)")
    detail: str = ""
    time: str = Field(default_factory=now)


class RunMeta(BaseModel):
    """``run.json``: who ran what, under which limits, and how it ended.

    ``agent``, ``model`` and ``seed`` are read from ``config`` (one meaning everywhere: the
    actor kind the factory built); files written before ``config`` existed are migrated on read.
    """

    run_id: str
    task: str
    task_root: str
    actor: str = Field(description="the acting object's kind in the trace: human, agent, replay, baseline")
    config: SerializeAsAny[ActorSpec] = Field(default_factory=ActorSpec)
    sandbox: str = "local"
    runtime: Runtime = Field(default_factory=Runtime, description="--python and --device the run "
                             "was started with: a resume or a later score uses them")
    budgets: Budgets = Field(default_factory=Budgets, description="the run's budgets (``limits`` in "
                             "run.json files written before it had this name)")
    task_source: str | None = Field(None, description="the task folder or name it was prepared from")
    batch: str | None = Field(None, description="the batch folder, for a batch's run")
    manifest: RunManifest | None = None
    fork: ForkOrigin | None = Field(None, description="set on a run forked from another's step")
    resumed: int = Field(0, description="times the run was continued after it stopped (resume); "
                         "reports keep such runs apart from independent attempts")
    status: RunStatus = "created"
    status_reason: str = ""
    infrastructure: bool = Field(False, description="the run's ``error`` is an infrastructure "
                                 "failure (its sandbox lost), not its actor's: continued from its "
                                 "last step by `run --resume` and `batch --retry-failed`")
    sandbox_events: list[SandboxEvent] = Field(default_factory=list, description="sandboxes "
                                               "lost under the run, backends it moved to")
    final_answer: str | None = None
    created_at: str = Field(default_factory=now)
    updated_at: str = Field(default_factory=now)
    finished_at: str | None = None
    totals: Totals = Field(default_factory=Totals)
    #: the status a newer labcoat wrote, when ``status`` reads ``unknown`` (:func:`read_meta`)
    _newer_status: str | None = PrivateAttr(None)

    @property
    def newer_status(self) -> str | None:
        return self._newer_status

    @computed_field
    @property
    def agent(self) -> str:
        return self.config.kind or self.actor

    @computed_field
    @property
    def model(self) -> str | None:
        return self.config.model

    @computed_field
    @property
    def seed(self) -> int:
        return self.config.seed

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        """run.json from before typed configs: ``agent``/``model``/``seed`` at the top,
        ``settings`` holding the CLI's choices, ``limits`` a loose dict; and ``limits``, the
        budgets' name before ``budgets``."""
        if not isinstance(data, dict):
            return data
        if "limits" in data and "budgets" not in data:
            data = {**data, "budgets": data["limits"]}
            del data["limits"]
        if "config" in data:
            return data
        data = dict(data)
        settings = data.pop("settings", None) or {}
        agent = data.get("agent") or None  # the actor's kind when no factory choice was made
        config = {"kind": settings.get("agent_type") or (agent if agent != data.get("actor") else None),
                  "model": data.get("model"), "seed": data.get("seed", 0)}
        for key in ("mode", "fast_model", "edit_model", "context", "observation_cap"):
            if settings.get(key) is not None:
                config[key] = settings[key]
        data["config"] = config
        data.setdefault("task_source", settings.get("task_source"))
        data.setdefault("batch", settings.get("batch"))
        if isinstance(data.get("budgets"), dict):
            data["budgets"] = {k: v for k, v in data["budgets"].items() if k in Budgets.model_fields}
        return data


class RunReadError(ValueError):
    """A ``run.json`` that cannot be read as a run: the message is one line naming the file and
    what is wrong, so every front end can show it as it is (a usage error, a skipped folder)."""


def _first_error(err: ValidationError) -> str:
    """A pydantic error as one short phrase: where, and what (not its many-line report)."""
    first = err.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the file"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def read_meta(path: str | Path, *, newer_ok: bool = False) -> RunMeta:
    """The ``run.json`` of the run folder ``path``, or :class:`RunReadError` saying in one line
    why not (missing, unreadable, empty, not JSON, not a run).

    A status this version does not know is a run written by a newer labcoat. A reader that
    only shows runs (``newer_ok``: reports) reads it as ``unknown`` and keeps the status in
    :attr:`RunMeta.newer_status`; whatever would act on the run or write it back (resume, fork,
    score: :meth:`RunDir.open`) refuses it, since it cannot know what that status means.
    """
    file = Path(path) / "run.json"
    try:
        if not stat.S_ISREG(os.stat(file).st_mode):  # a FIFO would be waited on forever
            raise RunReadError(f"{file}: not a regular file")
        raw = file.read_bytes()
    except FileNotFoundError:
        raise RunReadError(f"{Path(path)} is not a run directory (no run.json)") from None
    except OSError as err:
        raise RunReadError(f"{file}: cannot be read ({err.strerror or err})") from None
    if not raw.strip():
        raise RunReadError(f"{file}: empty (the run was stopped before it was written?)")
    try:
        data = json.loads(raw)
    except ValueError as err:  # UnicodeDecodeError too
        raise RunReadError(f"{file}: not JSON ({str(err).splitlines()[0][:120]})") from None
    if not isinstance(data, dict):
        raise RunReadError(f"{file}: not a run (a JSON {type(data).__name__}, not an object)")
    status = data.get("status")
    newer = status if isinstance(status, str) and status not in KNOWN_STATUSES else None
    if newer is not None:
        if not newer_ok:
            raise RunReadError(f"{file}: status {newer!r} is not one this labcoat knows (the run "
                               "was written by a newer version?): upgrade labcoat to use it")
        data = {**data, "status": "unknown"}
    try:
        meta = RunMeta.model_validate(data)
    except ValidationError as err:
        raise RunReadError(f"{file}: not a run this labcoat can read ({_first_error(err)})") from None
    meta._newer_status = newer
    return meta


class ComboRecord(BaseModel):
    """One batch combination's last known state in ``batch.json`` (written by ``agent.batch``,
    read by reports)."""

    task: str
    model: str
    seed: int
    run_dir: str | None = None
    state: str = "pending"
    status: str | None = None
    attempts: int = 0
    error: str | None = None
    improvement: float | None = None
    success: bool | None = None
    failure: str | None = None
    cost: float = 0.0
    tokens: int = 0
    updated_at: str = Field(default_factory=now)


class BatchRecords(BaseModel):
    """What a report reads of ``batch.json``: its combinations (the spec is the agent's)."""

    combos: dict[str, ComboRecord] = Field(default_factory=dict)


class Step(BaseModel):
    """One line of ``trace.jsonl``."""

    index: int
    time: str = Field(default_factory=now)
    actor: str
    action: str
    args: dict[str, Any] | str = Field(default_factory=dict)
    observation: str
    observation_full: str | None = None
    truncated: bool = False
    error: bool = False
    exit_code: int | None = None
    seconds: float = 0.0
    snapshot: str | None = None
    changed: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any] | None = None
    inherited: bool = Field(False, description="copied from the parent run by a fork, not taken "
                            "in this run")

    @property
    def is_final_answer(self) -> bool:
        """The step gave the run's answer: a Final Answer that was accepted (one refused as an
        error does not end the run)."""
        return self.action == FINAL_ANSWER and not self.error


def clean(value: Any) -> Any:
    """``value`` with every string made encodable: a lone surrogate (from a model reply, an
    action argument, a file name that is not UTF-8) becomes its ``\\udXXX`` escape."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def dump_json(model: BaseModel, **kw: Any) -> str:
    """The model as JSON; text that UTF-8 cannot hold is escaped, so writing a record never fails."""
    try:
        return model.model_dump_json(**kw)
    except (PydanticSerializationError, UnicodeEncodeError):
        return type(model).model_validate(clean(model.model_dump())).model_dump_json(**kw)


def new_run_id(task: str, actor: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in f"{task}-{actor}")[:60]
    return f"{stamp}-{safe}-{secrets.token_hex(3)}"


class RunDir:
    """One run's folder. Create with :meth:`create`, reopen with :meth:`open`."""

    def __init__(self, path: Path, meta: RunMeta, base_dir: Path | None) -> None:
        self.path = path
        self.meta = meta
        self.snapshots = SnapshotStore(path / "snapshots", base_dir)

    @property
    def workspace(self) -> Path:
        return self.path / "workspace"

    @property
    def trace_path(self) -> Path:
        return self.path / "trace.jsonl"

    @property
    def backups_dir(self) -> Path:
        return self.path / "backups"

    @classmethod
    def create(cls, runs_dir: Path, meta: RunMeta, source: Path, overlays: list[Path] = ()) -> RunDir:
        """A new run whose workspace is a copy of ``source`` with ``overlays`` laid over it."""
        path = Path(runs_dir) / meta.run_id
        path.mkdir(parents=True)
        for tree in (source, *overlays):  # by descriptor, as every workspace copy (sandbox.fs)
            copy_tree(WorkspaceFS(tree), WorkspaceFS(path / "workspace"), links=True,
                      mode=lambda m: m & 0o777)
        run = cls(path, meta, source)
        run.trace_path.touch()
        run.save_meta()
        run.snapshots.take(run.workspace, INITIAL, initial=True)
        return run

    @classmethod
    def create_fork(cls, runs_dir: Path, meta: RunMeta, parent: RunDir, prefix: list[Step]) -> RunDir:
        """A new run that starts where ``parent`` stood after ``prefix`` (its steps 1..K).

        The parent's snapshots 0..K are adopted (objects linked, not copied), the workspace is
        rebuilt from snapshot K, and the prefix is written as this run's trace with
        ``inherited`` set. ``run.json`` comes last: until it exists the folder is not a run,
        so a fork killed half-made is never loaded, resumed or scored.
        """
        at = len(prefix)
        if [s.index for s in prefix] != list(range(1, at + 1)):
            raise ValueError("a fork's prefix must be the parent's steps 1..K in order")
        path = Path(runs_dir) / meta.run_id
        path.mkdir(parents=True)
        try:
            run = cls(path, meta, parent.snapshots.base_dir)
            run.snapshots.adopt(parent.snapshots, [f"{i:05d}" for i in range(at + 1)])
            run.restore(at)
            with run.trace_path.open("w") as f:
                for step in prefix:
                    f.write(dump_json(step.model_copy(update={"inherited": True})) + "\n")
                f.flush()
                os.fsync(f.fileno())
            run.meta.totals.steps = at
            run.save_meta()
        except BaseException:
            try:  # a half-made fork is no run: leave nothing
                WorkspaceFS(path).remove_root()
            except WorkspaceError:
                pass
            raise
        parent.note_fork(run)
        return run

    @property
    def forks_path(self) -> Path:
        return self.path / "forks.jsonl"

    def note_fork(self, child: RunDir) -> None:
        """Record ``child`` as forked from this run (an appended line; the run's own records
        are not rewritten)."""
        assert child.meta.fork is not None
        record = ForkRecord(run_id=child.meta.run_id, path=str(child.path), step=child.meta.fork.step)
        with self.forks_path.open("a") as f:
            f.write(dump_json(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def forks(self) -> list[ForkRecord]:
        """The runs forked from this one whose folders still exist, oldest first."""
        if not self.forks_path.exists():
            return []
        found = []
        for line in self.forks_path.read_text().splitlines():
            try:
                record = ForkRecord.model_validate_json(line)
            except ValueError:
                continue  # a torn last line
            if (Path(record.path) / "run.json").exists():
                found.append(record)
        return found

    @classmethod
    def open(cls, path: str | Path, *, newer_ok: bool = False) -> RunDir:
        """The run at ``path``; :class:`RunReadError` (one line) when its run.json cannot be
        read. ``newer_ok``: for a reader only, a newer labcoat's status reads as ``unknown``
        (:func:`read_meta`; such a run's ``save_meta`` refuses)."""
        path = Path(path).resolve()
        if not (path / "run.json").exists():
            raise FileNotFoundError(f"{path} is not a run directory (no run.json)")
        meta = read_meta(path, newer_ok=newer_ok)
        base = Path(meta.task_root) / "env"
        return cls(path, meta, base if base.is_dir() else None)

    def task(self) -> TaskSpec:
        """The run's prepared task (``task_root``), prepared again (on the run's backend) when
        the cache was cleared since."""
        from environments.task.prepare import prepare_task  # prepare opens a sandbox
        from environments.task.spec import load_task
        from environments.task.suite import resolve_task

        root = Path(self.meta.task_root)
        if root.is_dir():
            return load_task(root, self.meta.task)
        return prepare_task(resolve_task(self.meta.task_source or self.meta.task),
                            sandbox=self.meta.sandbox)

    def save_meta(self) -> None:
        if self.meta.status == "unknown":  # never overwrite what a newer labcoat wrote
            raise RunReadError(f"{self.path / 'run.json'}: status {self.meta.newer_status!r} is "
                               "not one this labcoat knows; not rewritten")
        self.meta.updated_at = now()
        _fsync_write(self.path / "run.json", dump_json(self.meta, indent=2))

    def steps(self, trim: bool = True) -> list[Step]:
        """Every complete step; a torn final line (a kill mid-write) is trimmed away.

        ``trim=False`` only reads: for a reader that is not the run's writer (a fork, a
        comparison), to which a live run's line being written looks torn."""
        if not self.trace_path.exists():
            return []
        raw = self.trace_path.read_bytes()
        steps, good_len = [], 0
        for line in raw.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                steps.append(Step.model_validate_json(line))
            except ValueError:
                break
            good_len += len(line)
        if trim and good_len != len(raw):
            with self.trace_path.open("r+b") as f:
                f.truncate(good_len)
        return steps

    def append(self, step: Step) -> None:
        with self.trace_path.open("a") as f:
            f.write(dump_json(step) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.meta.totals.steps = step.index
        self.save_meta()

    def snapshot(self, index: int, cap_bytes: int | None = None) -> Manifest:
        return self.snapshots.take(self.workspace, f"{index:05d}", cap_bytes=cap_bytes)

    def restore(self, index: int, dest: Path | None = None) -> Manifest:
        """Rebuild step ``index``'s workspace (0 = the start) into ``dest`` or the workspace."""
        return self.snapshots.restore(f"{index:05d}", dest or self.workspace)

    def finish(self, status: RunStatus, reason: str = "") -> None:
        self.meta.status = status
        self.meta.status_reason = reason
        self.meta.finished_at = now()
        self.save_meta()

    def log_dir(self, name: str) -> Path:
        """A folder in the run for side records (model calls, scores)."""
        d = self.path / name
        d.mkdir(exist_ok=True)
        return d

    def write_json(self, name: str, data: Any) -> None:
        _fsync_write(self.path / name, json.dumps(clean(data), indent=2, default=str))
