"""The submission side of the scoring contract (``environments/scoring/submission.py``).

A task's ``scripts/produce.py`` imports the file the actor wrote (``policy.py``, ``model.py``,
...) with :func:`load_submission` and writes what it is asked for with :func:`save_outputs`; the
task's ``eval.py`` reads them back with :func:`load_outputs` in another process and computes the
metric. :func:`load_submission` refuses to run in that trusted phase, so an ``eval.py`` that
imports workspace code fails instead of trusting it. Outputs are plain arrays and JSON (no
pickles: loading them runs no code of the submission's).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType


def load_submission(folder: Path | str, filename: str, name: str | None = None) -> ModuleType:
    """Import ``folder/filename`` as module ``name`` (default: ``<stem>_submission``); a missing
    file is a :class:`FileNotFoundError` that names it."""
    if os.environ.get("LABCOAT_PHASE") == "trusted":
        raise RuntimeError("load_submission() runs submitted code: call it from the task's "
                           "produce.py (the submission phase), never from eval.py")
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


def save_outputs(out: Path | str, name: str = "outputs", **arrays) -> None:
    """Write ``arrays`` (numpy arrays, tensors, numbers) to ``out/<name>.npz``."""
    import numpy as np

    plain = {k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for k, v in arrays.items()}
    Path(out).mkdir(parents=True, exist_ok=True)
    np.savez(Path(out) / f"{name}.npz", **plain)


def load_outputs(folder: Path | str, name: str = "outputs") -> dict:
    """The arrays :func:`save_outputs` wrote (``allow_pickle=False``); a missing file is a
    :class:`FileNotFoundError` (the submission produced nothing: ``no_submission``)."""
    import numpy as np

    path = Path(folder) / f"{name}.npz"
    if not path.is_file():
        raise FileNotFoundError(f"the submission produced no {name}.npz")
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def save_json(out: Path | str, value: object, name: str = "outputs") -> None:
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / f"{name}.json").write_text(json.dumps(value))


def load_json(folder: Path | str, name: str = "outputs") -> object:
    path = Path(folder) / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"the submission produced no {name}.json")
    return json.loads(path.read_text())


SPLITS = ("search", "select", "test")


def split_of(here: Path | str) -> str:
    """Which private split the submission phase is producing for: ``search``, ``select`` or
    ``test``, from the ``split.txt`` the host writes beside ``produce.py`` (the submission
    cannot write there). ``test`` when there is none: a host from before the splits."""
    path = Path(here) / "split.txt"
    split = path.read_text().strip() if path.is_file() else "test"
    if split not in SPLITS:
        raise ValueError(f"split.txt says {split!r}: a split is one of {', '.join(SPLITS)}")
    return split
