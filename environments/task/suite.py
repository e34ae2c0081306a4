"""The shipped task suite, and resolving ``TASK`` (a suite name, ``suite:NAME`` or a folder path)."""

from __future__ import annotations

import difflib
from pathlib import Path

from environments.task.spec import TaskError, TaskSpec, load_task

TASKS_DIR = Path(__file__).resolve().parents[1] / "tasks"


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


#: ``suite:NAME`` names labcoat's own task even where a folder of that name is at hand
SUITE_PREFIX = "suite:"


def _close(text: str, names: list[str]) -> str:
    """`` did you mean digits?`` for a near miss (``digit``), else nothing."""
    close = difflib.get_close_matches(text, names, n=3)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def locate_task(name_or_path: str | Path) -> Path:
    """The folder ``TASK`` names, without loading it: ``suite:NAME`` is the suite's task, a
    suite name is the suite's task unless a folder of that name is also at hand (then it is
    ambiguous: inside MLAgentBench's ``benchmarks/``, ``vectorization`` would otherwise
    silently be labcoat's own task, not the folder beside the person), anything else a folder
    path. A :class:`TaskError` says which, with the suite name meant for a near miss."""
    text = str(name_or_path)
    suite = {p.name: p for p in suite_task_dirs()}
    if text.startswith(SUITE_PREFIX):
        name = text[len(SUITE_PREFIX):]
        if name in suite:
            return suite[name]
        raise TaskError(f"{name!r} is not a suite task{_close(name, list(suite))}")
    path = Path(text).expanduser()
    if text in suite:
        if path.is_dir() and path.resolve() != suite[text].resolve():
            raise TaskError(f"{text!r} is both labcoat's suite task and the folder ./{text}: say "
                            f"`{SUITE_PREFIX}{text}` or `./{text}`")
        return suite[text]
    if path.is_dir():
        return path
    raise TaskError(f"{text!r} is neither a suite task nor a task folder{_close(text, list(suite))}")


def resolve_task(name_or_path: str | Path) -> TaskSpec:
    """The task ``TASK`` names (:func:`locate_task`), loaded; a clear error for neither or both."""
    return load_task(locate_task(name_or_path))


def apart_from_suite(name: str, source: str | None) -> str:
    """``name`` as reports key a run's task: a run of a folder that is not the suite task of
    that name (MLAgentBench's ``house-price`` beside labcoat's: other data, another metric)
    is keyed ``house-price (benchmarks/house-price)``, so the two never share a row."""
    if not source or not Path(source).is_absolute():
        return name
    suite = TASKS_DIR / name
    try:
        if not suite.is_dir() or Path(source).resolve() == suite.resolve():
            return name
    except OSError:
        return name
    return f"{name} ({Path(source).parent.name}/{Path(source).name})"
