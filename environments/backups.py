"""Per-file edit history behind Undo Edit Script, kept outside the workspace.

Backups live in the run directory, not in the workspace (MLAgentBench used a ``backup/``
folder the actor could see and trip over), and survive a resume.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


class Backups:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.index_path = root / "index.json"
        self.index: dict[str, list[str | None]] = (
            json.loads(self.index_path.read_text()) if self.index_path.exists() else {}
        )

    def save(self, rel: str, path: Path) -> None:
        """Remember the current content of ``path`` (or that it did not exist) before an edit."""
        history = self.index.setdefault(rel, [])
        if path.is_file():
            name = f"{len(self.index)}-{len(history)}-{Path(rel).name}"
            shutil.copyfile(path, self.root / name)
            history.append(name)
        else:
            history.append(None)
        self._flush()

    def restore(self, rel: str, path: Path) -> bool:
        """Put back the version before the last edit; False when there is none."""
        history = self.index.get(rel)
        if not history:
            return False
        name = history.pop()
        if name is None:
            path.unlink(missing_ok=True)
        else:
            shutil.copyfile(self.root / name, path)
            (self.root / name).unlink()
        self._flush()
        return True

    def _flush(self) -> None:
        tmp = self.index_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.index))
        tmp.replace(self.index_path)
