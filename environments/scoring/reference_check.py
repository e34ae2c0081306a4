"""``labcoat check-task``: does the task's ``reference/`` beat its baseline past the threshold?

A task is only worth running if a known solution shows the threshold can be reached. The
baseline is decided by :mod:`environments.scoring.baselines` (fixed, stored, or measured now); the
reference is ``env/`` with ``reference/`` over it, solved and evaluated like any submission. A
timed task compares the two in one paired scoring instead, and passes only when the whole
interval of its improvement is past the threshold. (Not the tests' per-task checks,
``tests/task_checks.py``, which assert more of each suite task.)
"""

from __future__ import annotations

import statistics
import time

from pydantic import BaseModel

from environments.scoring.baselines import (
    BaselineSource,
    decide_baseline,
    improvement,
    measure,
    solved_workspace,
)
from environments.scoring.evaluate import evaluate
from environments.task.spec import TaskSpec
from sandbox.fs import temporary_folder


class ReferenceCheck(BaseModel):
    task: str
    baseline: float
    baseline_source: BaselineSource
    baseline_why: str = ""
    reference: float
    improvement: float
    threshold: float
    passed: bool
    seconds: float


def check_reference(task: TaskSpec, sandbox: str = "auto", runs: int = 1) -> ReferenceCheck:
    """Baseline (fixed, stored, or measured now) against ``reference/``: must beat the threshold."""
    start = time.perf_counter()
    if not task.reference_dir.is_dir():
        raise RuntimeError(f"{task.root}: no reference/ solution to check")
    if task.timed:
        return _check_timed(task, sandbox, start)
    baseline = decide_baseline(task, sandbox, runs)
    reference = statistics.fmean(measure(task, task.reference_dir, runs=runs, sandbox=sandbox))
    imp = improvement(reference, baseline.value, task.higher_is_better)
    return ReferenceCheck(task=task.name, baseline=baseline.value, baseline_source=baseline.source,
                          baseline_why=baseline.why,
                          reference=reference, improvement=imp, threshold=task.success_threshold,
                          passed=imp >= task.success_threshold, seconds=time.perf_counter() - start)


def _check_timed(task: TaskSpec, sandbox: str, start: float) -> ReferenceCheck:
    """A timed task: the reference against the pristine env/ in one paired scoring; it passes
    when the whole interval of its improvement is past the threshold."""
    with temporary_folder("labcoat-measure-") as tmp:
        result = evaluate(task, solved_workspace(task, tmp / "workspace", task.reference_dir, sandbox),
                          sandbox)
    if result.value is None or result.paired is None:
        raise RuntimeError(f"{task.name}: evaluation failed ({result.failure}): {result.detail}")
    return ReferenceCheck(task=task.name, baseline=result.baseline,
                          baseline_source="same call (paired)", reference=result.value,
                          improvement=result.paired.improvement, threshold=task.success_threshold,
                          passed=result.paired.improvement_low >= task.success_threshold,
                          seconds=time.perf_counter() - start)
