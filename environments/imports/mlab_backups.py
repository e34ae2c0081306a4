"""MLAgentBench's undo store (``backup/`` in its workspace) as an imported run's backups.

MLAgentBench keeps Undo Edit Script's history in the workspace itself: each edit copies the
old script to ``backup/<script>_<YYYY-mm-dd_HH-MM-SS>``, and an undo copies the latest one back
and deletes it. Its step copies (``traces/step_N_files``) carry that folder along, so the store
after each step is in the log. labcoat keeps Undo history outside the workspace
(:class:`environments.record.backups.Backups`, which the actor never sees and forks take over
at their step): on import, the difference between two steps' stores is replayed there as the
pushes (a new backup) and pops (one gone) that step made, and ``backup/`` leaves the
workspace. A fork right after an MLAgentBench edit can then Undo it as MLAgentBench could.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from environments.record.backups import MAX_BACKUP_BYTES, Backups
from sandbox.fs import WorkspaceError, WorkspaceFS

__all__ = ["UNDO_DIR", "replay", "undo_store"]

UNDO_DIR = "backup"
_NAME = re.compile(r"(.+)_(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})")
MAX_DEPTH = 16
MAX_ENTRIES = 10_000


def undo_store(fs: WorkspaceFS, copy: str) -> dict[str, str]:
    """The backups in the step copy ``copy`` (``backup/…`` relative to it -> the script it
    is a version of); links and other odd entries are not read."""
    found: dict[str, str] = {}
    stack = [("", 0)]
    while stack and len(found) < MAX_ENTRIES:
        rel, depth = stack.pop()
        here = f"{copy}/{UNDO_DIR}/{rel}".rstrip("/")
        try:
            entries = fs.listdir(here) if fs.kind(here) == "dir" else []
        except WorkspaceError:
            continue
        for e in entries:
            name = f"{rel}/{e.name}" if rel else e.name
            if e.kind == "dir" and depth < MAX_DEPTH:
                stack.append((name, depth + 1))
            elif e.kind == "file" and (m := _NAME.fullmatch(name)):
                found[name] = m[1]
    return found


def replay(backups: Backups, fs: WorkspaceFS, copy: str, before: dict[str, str],
           after: dict[str, str]) -> list[str]:
    """Record in ``backups`` what changed from the store ``before`` to ``after`` (the one in
    ``copy``): a backup gone is an Undo (pop, latest first), a new one an edit (push, in
    MLAgentBench's order: by name). Notes on backups that could not be kept."""
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="labcoat-mlab-undo-") as tmp:
        scratch = WorkspaceFS(Path(tmp))
        for name in sorted(set(before) - set(after), reverse=True):
            if not backups.restore(before[name], scratch):
                notes.append(f"an undo of {before[name]} with no edit before it in the log")
        for name in sorted(set(after) - set(before)):
            script = after[name]
            try:
                data, size = fs.read(f"{copy}/{UNDO_DIR}/{name}", MAX_BACKUP_BYTES + 1)
                scratch.write(script, data)
                if size > MAX_BACKUP_BYTES:  # kept as "too large", as an edit's would be
                    os.truncate(Path(tmp) / script, size)
            except WorkspaceError as err:
                notes.append(f"{UNDO_DIR}/{name} not kept: {err}")
                continue
            backups.save(script, scratch)
            scratch.remove(script)
    return notes
