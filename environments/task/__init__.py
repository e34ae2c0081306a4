"""A task: its folder's contract (:mod:`.spec`), the walk that loads it without following a link
(:mod:`.tree`), the suite and names (:mod:`.suite`), MLAgentBench's own folders recognised by
content (:mod:`.mlagentbench`), ``prepare.py`` run once into a cache (:mod:`.prepare`), the
normalized-score anchors (:mod:`.anchors`), how a task's sandbox is set up (:mod:`.sandboxing`)
and where labcoat keeps what outlives a run (:mod:`.home`)."""

from __future__ import annotations

from environments.task.anchors import load_anchors, normalize
from environments.task.home import labcoat_home
from environments.task.prepare import prepare_task
from environments.task.sandboxing import code_mounts, sandbox_limits
from environments.task.spec import (
    DEFAULT_THRESHOLD,
    TaskError,
    TaskLimits,
    TaskSpec,
    check_folder,
    load_task,
)
from environments.task.suite import (
    TASKS_DIR,
    list_tasks,
    locate_task,
    resolve_task,
    scan_tasks,
    suite_task_dirs,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "TASKS_DIR",
    "TaskError",
    "TaskLimits",
    "TaskSpec",
    "check_folder",
    "code_mounts",
    "labcoat_home",
    "list_tasks",
    "load_anchors",
    "load_task",
    "locate_task",
    "normalize",
    "prepare_task",
    "resolve_task",
    "sandbox_limits",
    "scan_tasks",
    "suite_task_dirs",
]
