"""Loading what a task's ``eval.py`` scores: a Python file from the submitted workspace.

Every method task scores a file the actor wrote (``policy.py``, ``model.py``, ...). The
workspace goes on ``sys.path`` so that file's own imports of its neighbours resolve, and the
module is registered under ``name`` (pickling and multiprocessing find it there).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_submission(folder: Path | str, filename: str, name: str | None = None) -> ModuleType:
    """Import ``folder/filename`` as module ``name`` (default: ``<stem>_submission``); a missing
    file is a :class:`FileNotFoundError` that names it."""
    folder = Path(folder).resolve()
    path = folder / filename
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the workspace has no {filename}")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    name = name or f"{path.stem}_submission"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
