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
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_core import PydanticSerializationError

from environments.snapshots import Manifest, SnapshotStore, _fsync_write

RunStatus = Literal[
    "created", "running", "finished", "error", "interrupted",
    "max_steps", "max_time", "max_tokens", "max_cost",
]
INITIAL = "00000"


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


class RunMeta(BaseModel):
    """``run.json``: who ran what, under which limits, and how it ended."""

    run_id: str
    task: str
    task_root: str
    actor: str = Field(description="human, agent, replay, baseline ...")
    agent: str = ""
    model: str | None = None
    seed: int = 0
    sandbox: str = "local"
    limits: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    status: RunStatus = "created"
    status_reason: str = ""
    final_answer: str | None = None
    created_at: str = Field(default_factory=now)
    updated_at: str = Field(default_factory=now)
    finished_at: str | None = None
    totals: Totals = Field(default_factory=Totals)


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
        shutil.copytree(source, path / "workspace", symlinks=True)
        for overlay in overlays:
            shutil.copytree(overlay, path / "workspace", symlinks=True, dirs_exist_ok=True)
        run = cls(path, meta, source)
        run.trace_path.touch()
        run.save_meta()
        run.snapshots.take(run.workspace, INITIAL, initial=True)
        return run

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        path = Path(path).resolve()
        meta_path = path / "run.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"{path} is not a run directory (no run.json)")
        meta = RunMeta.model_validate_json(meta_path.read_text())
        base = Path(meta.task_root) / "env"
        return cls(path, meta, base if base.is_dir() else None)

    def save_meta(self) -> None:
        self.meta.updated_at = now()
        _fsync_write(self.path / "run.json", dump_json(self.meta, indent=2))

    def steps(self) -> list[Step]:
        """Every complete step; a torn final line (a kill mid-write) is trimmed away."""
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
        if good_len != len(raw):
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
