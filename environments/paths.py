"""The one path guard every file action goes through.

An actor names files by workspace-relative paths. Anything that could reach outside the
workspace (absolute paths, ``..``, a symlink whose target lies outside) is refused, and
read-only files can be read but never written, copied over, or deleted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath


class PathRefused(ValueError):
    """A path an actor may not use; the message is shown to the actor as is."""


class PathGuard:
    def __init__(self, root: Path, is_read_only: Callable[[str], bool]) -> None:
        self.root = Path(os.path.realpath(root))
        self._is_read_only = is_read_only

    def relative(self, name: str) -> str:
        """Normalise an actor's path to a clean workspace-relative POSIX path."""
        if not isinstance(name, str) or not name.strip():
            raise PathRefused("a path is required")
        raw = name.strip()
        if "\x00" in raw:
            raise PathRefused(f"{name!r}: invalid character in path")
        p = PurePosixPath(raw)
        if p.is_absolute() or raw.startswith("~"):
            raise PathRefused(f"{name!r}: absolute paths are not allowed; use a path relative to the workspace")
        if ".." in p.parts:
            raise PathRefused(f"{name!r}: '..' is not allowed; paths must stay inside the workspace")
        rel = str(p)
        return "." if rel in ("", ".") else rel

    def resolve(self, name: str, *, write: bool = False) -> Path:
        """The host path for ``name``; refuses escapes, and writes to read-only files."""
        rel = self.relative(name)
        path = self.root / rel
        real = Path(os.path.realpath(path))
        if real != self.root and self.root not in real.parents:
            raise PathRefused(f"{name!r}: it is a symlink that leads outside the workspace")
        if write:
            real_rel = real.relative_to(self.root).as_posix() if real != self.root else "."
            if self._is_read_only(rel) or self._is_read_only(real_rel):
                raise PathRefused(f"{name!r} is read-only for this task")
            if real == self.root:
                raise PathRefused(f"{name!r}: cannot write the workspace folder itself")
        return path
