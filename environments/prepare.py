"""Preparing a task once: a private copy of its folder in which ``prepare.py`` has run.

``prepare.py`` writes into the task folder (data into ``env/``, held-out answers beside
itself), which must not happen in the installed package, and must happen only once however
many runs share the task. So labcoat copies the folder into a cache keyed by the folder's
content, runs ``prepare.py`` there under a lock, and every run uses that copy.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from environments.task import TaskError, TaskSpec, load_task


def labcoat_home() -> Path:
    return Path(os.environ.get("LABCOAT_HOME", Path.home() / ".cache" / "labcoat"))


def fingerprint(root: Path) -> str:
    """Hash of the task folder's files (names, sizes, contents of small files)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        rel = p.relative_to(root).as_posix()
        st = p.stat()
        h.update(f"{rel}:{st.st_size}\n".encode())
        if st.st_size < (1 << 20):
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def prepare_task(task: TaskSpec, cache: Path | None = None, timeout: float = 900) -> TaskSpec:
    """The prepared task (the task itself when it has no ``prepare.py``)."""
    if not task.prepare_path.exists():
        return task
    cache = cache or labcoat_home() / "tasks"
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / f"{task.name}-{fingerprint(task.root)}"
    marker = dest / ".prepared"
    if marker.exists():
        return load_task(dest, task.name)
    with open(cache / f".{dest.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return load_task(dest, task.name)
        tmp = cache / f".{dest.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(task.root, tmp, ignore=shutil.ignore_patterns("__pycache__"))
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME", "TMPDIR")}
        env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="2", PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.run(
            [sys.executable, "prepare.py"], cwd=tmp / "scripts", env=env,
            capture_output=True, text=True, timeout=timeout,
        )
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise TaskError(
                f"{task.prepare_path}: prepare.py failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
            )
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        marker.write_text("ok\n")
    return load_task(dest, task.name)
