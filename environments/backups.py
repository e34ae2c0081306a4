"""Per-file edit history behind Undo Edit Script, kept outside the workspace.

Backups live in the run directory, not in the workspace (MLAgentBench used a ``backup/``
folder the actor could see and trip over), and survive a resume. The workspace side is read
and written only through :class:`~environments.safefs.WorkspaceFS` (by descriptor, never
through a link); the backup folder is the host's own.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from environments.safefs import CHUNK, WorkspaceError, WorkspaceFS

MAX_BACKUP_BYTES = 64 << 20  # a larger file's old version is not kept (Undo says so)
TOO_BIG = "!too-big:"


class Backups:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.index_path = root / "index.json"
        self.index: dict[str, list[str | None]] = (
            json.loads(self.index_path.read_text()) if self.index_path.exists() else {}
        )

    def save(self, rel: str, fs: WorkspaceFS) -> None:
        """Remember the current content of ``rel`` (or that it did not exist) before an edit."""
        history = self.index.setdefault(rel, [])
        st = fs.lstat(rel)
        if st is None or fs.kind(rel) != "file":
            history.append(None)
        elif st.st_size > MAX_BACKUP_BYTES:
            history.append(f"{TOO_BIG}{st.st_size}")
        else:
            name = f"{len(self.index)}-{len(history)}-{secrets.token_hex(4)}"
            with (self.root / name).open("wb") as out:
                for chunk in fs.chunks(rel):
                    out.write(chunk)
            history.append(name)
        self._flush()

    def restore(self, rel: str, fs: WorkspaceFS) -> bool:
        """Put back the version before the last edit; False when there is none."""
        history = self.index.get(rel)
        if not history:
            return False
        name = history.pop()
        self._flush()
        if name is None:
            fs.remove(rel)
        elif name.startswith(TOO_BIG):
            raise WorkspaceError(f"the version of {rel!r} before its last edit was too large to keep "
                                 f"({int(name.removeprefix(TOO_BIG)):,} bytes); it cannot be undone")
        else:
            with (self.root / name).open("rb") as f:
                fs.write(rel, iter(lambda: f.read(CHUNK), b""))
            (self.root / name).unlink()
        return True

    def _flush(self) -> None:
        tmp = self.index_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.index))
        tmp.replace(self.index_path)
