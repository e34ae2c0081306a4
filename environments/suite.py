"""The shipped task suite, and resolving ``TASK`` (a suite name or a folder path)."""

from __future__ import annotations

from pathlib import Path

from environments.task import TaskError, TaskSpec, load_task

TASKS_DIR = Path(__file__).resolve().parent / "tasks"


def suite_task_dirs() -> list[Path]:
    if not TASKS_DIR.is_dir():
        return []
    return sorted(p for p in TASKS_DIR.iterdir() if p.is_dir() and (p / "scripts").is_dir())


def list_tasks() -> list[TaskSpec]:
    """Every suite task that loads; a broken one raises, naming its file (tests keep it so)."""
    return [load_task(p) for p in suite_task_dirs()]


def scan_tasks(dirs: list[Path] | None = None) -> tuple[list[TaskSpec], list[TaskError]]:
    """Every task that loads (the suite's, or ``dirs``), and the errors of those that do not
    (for listings that must stay up when one task folder is broken)."""
    tasks, errors = [], []
    for p in suite_task_dirs() if dirs is None else dirs:
        try:
            tasks.append(load_task(p))
        except TaskError as err:
            errors.append(err)
    return tasks, errors


def resolve_task(name_or_path: str | Path) -> TaskSpec:
    """A suite task by name, else a task folder by path; a clear error for neither."""
    text = str(name_or_path)
    for p in suite_task_dirs():
        if p.name == text:
            return load_task(p)
    path = Path(text).expanduser()
    if path.is_dir():
        return load_task(path)
    known = ", ".join(p.name for p in suite_task_dirs()) or "none"
    raise TaskError(f"{text!r} is neither a suite task ({known}) nor a task folder")
