"""Per-file edit history behind Undo Edit Script, kept outside the workspace.

Backups live in the run directory, not in the workspace (MLAgentBench used a ``backup/``
folder the actor could see and trip over), and survive a resume. The workspace side is read
and written only through :class:`~sandbox.fs.WorkspaceFS` (by descriptor, never
through a link); the backup folder is the host's own.

The record is ``log.jsonl``, append-only: one :class:`BackupEvent` per push (an edit kept the
old version) and per pop (Undo put it back), each with the step that made it. The stacks are
the log replayed, and so is any earlier state: a fork at step K (:func:`inherit`) takes over
the stacks as they stood right after step K. That is why a popped version's file is kept, not
deleted (a fork at an earlier step may need it), and why a kept file is written once, by
exclusive create, and never modified in place.

The step comes from the run's own trace (``trace.jsonl`` beside ``backups/``): an action runs
before its step's line is appended, so the step being taken is the count of whole lines plus
one. Without a trace (an unrecorded session) events carry no step. Runs from before the log
kept ``index.json`` (the stacks only, no steps, popped versions deleted): they load as before,
are converted to the log on their next edit or Undo, and their histories, whose steps are
unknown, are not inherited by a fork (:func:`inherit` says so in ``inherited.json``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from sandbox.fs import CHUNK, FileBytes, WorkspaceError, WorkspaceFS

__all__ = ["BackupEvent", "Backups", "Inheritance", "inherit", "stacks_at"]

MAX_BACKUP_BYTES = 64 << 20  # a larger file's old version is not kept (Undo says so)
MAX_LOG_BYTES = 64 << 20  # a parent's log larger than this is not read by a fork
TOO_BIG = "!too-big:"
LOG = "log.jsonl"
LEGACY_INDEX = "index.json"
INHERITED = "inherited.json"
TRACE = "trace.jsonl"
#: what a kept version's file name may be: one plain component, never a path or a dot name
NAME = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,99}")
LEGACY = ("its history was kept before labcoat recorded the step of each edit (an older run), "
          "so its state at the fork step is unknown")


class BackupEvent(BaseModel):
    """One line of ``backups/log.jsonl``."""

    op: Literal["push", "pop"]
    path: str = Field(description="the workspace-relative file the edit or Undo was of")
    entry: str | None = Field(None, description="push: the kept version's file name in backups/, "
                              "None when the file did not exist, or TOO_BIG + its size")
    step: int | None = Field(None, ge=0, description="the step that made it; None when unknown "
                             "(an unrecorded session, or a run from before steps were recorded)")


class Inheritance(BaseModel):
    """``backups/inherited.json`` of a fork: which Undo histories it took over, and why not."""

    parent_dir: str
    step: int
    files: dict[str, int] = Field(default_factory=dict, description="file -> versions on its "
                                  "Undo stack right after the fork step")
    not_inherited: dict[str, str] = Field(default_factory=dict, description="file -> why its "
                                          "history was not taken over (Undo in the fork reaches "
                                          "only the fork's own edits of it)")
    note: str = Field("", description="why nothing at all was read from the parent, if so")


class Backups:
    """The Undo stacks of one run (or unrecorded session), kept in ``root``."""

    def __init__(self, root: Path, trace: Path | None = None) -> None:
        """``trace`` says which step is being taken; by default the run's ``trace.jsonl`` when
        ``root`` is a run's ``backups/`` folder."""
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_path = self.root / LOG
        self._steps = _StepCounter(trace or (self.root.parent / TRACE if self.root.name == "backups"
                                             else None))
        self._legacy = not self.log_path.exists() and (self.root / LEGACY_INDEX).exists()
        if self._legacy:
            events = _legacy_events(json.loads((self.root / LEGACY_INDEX).read_text()))
        elif self.log_path.exists():
            events, torn = _parse(self.log_path.read_bytes())
            if torn:  # a kill mid-line: keep the whole lines, so the next one starts a line
                _write_log(self.log_path, events)
        else:
            events = []
        self.stacks: dict[str, list[BackupEvent]] = stacks_at(events, None)

    def save(self, rel: str, fs: WorkspaceFS) -> None:
        """Remember the current content of ``rel`` (or that it did not exist) before an edit."""
        st = fs.lstat(rel)
        if st is None or fs.kind(rel) != "file":
            entry = None
        elif st.st_size > MAX_BACKUP_BYTES:
            entry = f"{TOO_BIG}{st.st_size}"
        else:
            entry = f"{len(self.stacks.get(rel, []))}-{secrets.token_hex(8)}"
            _keep(self.root / entry, fs.chunks(rel))
        event = BackupEvent(op="push", path=rel, entry=entry, step=self._steps.current())
        self._record(event)
        self.stacks.setdefault(rel, []).append(event)

    def restore(self, rel: str, fs: WorkspaceFS) -> bool:
        """Put back the version before the last edit; False when there is none.

        The stack is popped only once the version is back, so a failed Undo loses nothing;
        the kept file stays (a fork at an earlier step may still need it)."""
        history = self.stacks.get(rel)
        if not history:
            return False
        name = history[-1].entry
        if name is None:
            fs.remove(rel)
        elif name.startswith(TOO_BIG):
            raise WorkspaceError(f"the version of {rel!r} before its last edit was too large to keep "
                                 f"({int(name.removeprefix(TOO_BIG)):,} bytes); it cannot be undone")
        else:
            self._put_back(rel, name, fs)
        self._record(BackupEvent(op="pop", path=rel, step=self._steps.current()))
        history.pop()
        return True

    def _put_back(self, rel: str, name: str, fs: WorkspaceFS) -> None:
        """Write the kept version ``name`` (opened by descriptor inside ``root``) over ``rel``;
        the write is atomic, so a failed read changes nothing."""
        opened = False
        try:
            if not NAME.fullmatch(name):
                raise WorkspaceError("its name is not one labcoat writes")
            with WorkspaceFS(self.root).open_read(name) as f:
                opened = True
                fd = f.fileno()
                fs.write(rel, FileBytes(lambda: os.dup(fd)))  # holes kept
        except WorkspaceError as err:
            if opened:
                raise
            raise WorkspaceError(f"the kept version of {rel!r} before its last edit cannot be read "
                                 f"({err}); it cannot be undone") from None

    def _record(self, event: BackupEvent) -> None:
        if self._legacy:  # an older run's first change: its stacks become the log's start
            _write_log(self.log_path, [e for stack in self.stacks.values() for e in stack])
            (self.root / LEGACY_INDEX).unlink(missing_ok=True)
            self._legacy = False
        with self.log_path.open("a") as f:
            f.write(event.model_dump_json() + "\n")


class _StepCounter:
    """The step being taken: whole lines of the run's trace plus one, counted incrementally
    (the trace is append-only; a trimmed one is counted again from its start)."""

    def __init__(self, trace: Path | None) -> None:
        self.trace, self.pos, self.lines = trace, 0, 0

    def current(self) -> int | None:
        if self.trace is None or not self.trace.is_file():
            return None
        with self.trace.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < self.pos:
                self.pos, self.lines = 0, 0
            f.seek(self.pos)
            offset = self.pos
            while chunk := f.read(CHUNK):
                if newlines := chunk.count(b"\n"):
                    self.lines += newlines
                    self.pos = offset + chunk.rfind(b"\n") + 1  # a torn line is read again next time
                offset += len(chunk)
        return self.lines + 1


def _keep(path: Path, content: FileBytes) -> None:
    """Write a kept version once: exclusive create, so nothing (a link, an older file) is
    ever written through; by its data only, so a sparse file's version stays sparse."""
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        content.write_to(out)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    finally:
        os.close(out)


def _parse(raw: bytes) -> tuple[list[BackupEvent], bool]:
    """The log's events, and whether it ended in a torn line (ignored). A line that is not an
    event is skipped."""
    events = []
    lines = raw.split(b"\n")
    for line in lines[:-1]:
        try:
            events.append(BackupEvent.model_validate_json(line))
        except ValidationError:
            continue
    return events, lines[-1] != b""


def _legacy_events(index: object) -> list[BackupEvent]:
    """``index.json`` of an older run (file -> its stack of names) as pushes without a step."""
    if not isinstance(index, dict):
        return []
    return [BackupEvent(op="push", path=rel, entry=name) for rel, stack in index.items()
            if isinstance(rel, str) and isinstance(stack, list)
            for name in stack if name is None or isinstance(name, str)]


def _write_log(path: Path, events: Iterable[BackupEvent]) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    tmp.write_text("".join(e.model_dump_json() + "\n" for e in events))
    tmp.replace(path)


def stacks_at(events: Iterable[BackupEvent], step: int | None) -> dict[str, list[BackupEvent]]:
    """Each file's stack after the events of steps ``<= step`` (all events when None), in log
    order. A pop of an empty stack (a damaged log) is ignored."""
    stacks: dict[str, list[BackupEvent]] = {}
    for e in events:
        if step is not None and (e.step is None or e.step > step):
            continue
        stack = stacks.setdefault(e.path, [])
        if e.op == "push":
            stack.append(e)
        elif stack:
            stack.pop()
    return {rel: stack for rel, stack in stacks.items() if stack}


# --- forks ------------------------------------------------------------------------------------


def inherit(parent_dir: Path, child_dir: Path, step: int) -> Inheritance:
    """Give the fresh ``child_dir`` the Undo history ``parent_dir`` had right after ``step``.

    Each file's events of steps ``<= step`` are copied into the child's log with every version
    file they name (popped ones too: a fork of the fork at an earlier step needs them), so Undo
    in the child goes back exactly as far as it could in the parent then. Nothing of the parent
    is written or linked: files are copied, read by descriptor (a symlink, a FIFO or a name
    that is not a plain file name in the parent's folder is never followed, opened for long or
    read outside it). A file whose history cannot be taken over whole (unknown steps, a bad
    entry) gets none; the reasons go to the child's ``inherited.json``, which is returned.
    """
    child_dir = Path(child_dir)
    child_dir.mkdir(parents=True, exist_ok=True)
    if (child_dir / LOG).exists() or (child_dir / LEGACY_INDEX).exists():
        raise ValueError(f"{child_dir} already holds an Undo history")
    record = Inheritance(parent_dir=str(parent_dir), step=step)
    source = WorkspaceFS(Path(parent_dir))
    events, record.note = _parent_events(source, record)
    by_file: dict[str, list[BackupEvent]] = {}
    for e in events:
        by_file.setdefault(e.path, []).append(e)
    order = {id(e): i for i, e in enumerate(events)}
    kept: list[BackupEvent] = []
    for rel, history in by_file.items():
        why = _take_over(source, child_dir, history, step)
        if why:
            record.not_inherited[rel] = why
            continue
        taken = [e for e in history if e.step is not None and e.step <= step]
        kept += taken
        if depth := len(stacks_at(taken, step).get(rel, [])):
            record.files[rel] = depth
    if kept:
        _write_log(child_dir / LOG, sorted(kept, key=lambda e: order[id(e)]))
    (child_dir / INHERITED).write_text(record.model_dump_json(indent=2))
    return record


def _parent_events(source: WorkspaceFS, record: Inheritance) -> tuple[list[BackupEvent], str]:
    """The parent's log events, or none and why (for an older run, the files it concerns go to
    ``record.not_inherited``)."""
    if not os.path.lexists(source.root):
        return [], "the parent kept no Undo history"
    try:
        source.lstat(".")  # the folder itself, never through a link
        kind = source.kind(LOG)
    except WorkspaceError as err:
        return [], f"the parent's backups folder cannot be read: {err}"
    if kind is None:
        if source.kind(LEGACY_INDEX) is None:
            return [], "the parent kept no Undo history"
        try:
            raw, size = source.read(LEGACY_INDEX, MAX_LOG_BYTES)
            index = json.loads(raw) if size <= MAX_LOG_BYTES else {}
        except (WorkspaceError, ValueError):
            index = {}
        record.not_inherited.update((e.path, LEGACY) for e in _legacy_events(index))
        return [], f"the parent's Undo history is from before steps were recorded: {LEGACY}"
    st = source.lstat(LOG)
    if st is not None and st.st_size > MAX_LOG_BYTES:
        return [], f"the parent's Undo log is {st.st_size:,} bytes, more than a fork reads ({MAX_LOG_BYTES:,})"
    try:
        raw, size = source.read(LOG, MAX_LOG_BYTES)  # by descriptor: never a link, never waits
    except WorkspaceError as err:
        return [], f"the parent's Undo log cannot be read: {err}"
    if size > MAX_LOG_BYTES:  # it grew since
        return [], f"the parent's Undo log is {size:,} bytes, more than a fork reads ({MAX_LOG_BYTES:,})"
    return _parse(raw)[0], ""  # a live parent's torn last line is its next step's: ignored


def _take_over(source: WorkspaceFS, child_dir: Path, history: list[BackupEvent], step: int) -> str:
    """Copy the version files one file's events up to ``step`` name; why not, or ""."""
    if any(e.step is None for e in history):
        return LEGACY
    names = [e.entry for e in history if e.op == "push" and e.step is not None and e.step <= step
             and e.entry is not None and not e.entry.startswith(TOO_BIG)]
    copied: list[Path] = []
    for name in names:
        why = _copy_entry(source, child_dir, name, copied)
        if why:
            for path in copied:
                path.unlink(missing_ok=True)
            return why
    return ""


def _copy_entry(source: WorkspaceFS, child_dir: Path, name: str, copied: list[Path]) -> str:
    if not NAME.fullmatch(name):
        return f"its history names {name!r}, which is not a file in the parent's backups folder"
    try:
        st = source.lstat(name)
        if st is None or source.kind(name) != "file":
            raise WorkspaceError(f"{name!r} is {'missing' if st is None else 'not a regular file'}")
        if st.st_size > MAX_BACKUP_BYTES:
            raise WorkspaceError(f"{name!r} is larger than any version labcoat keeps")
        dest = child_dir / name
        _keep(dest, source.chunks(name))
    except (WorkspaceError, OSError) as err:
        return f"a kept version of it cannot be copied from the parent ({err})"
    copied.append(dest)
    return ""
