"""A task's baseline: the one place that decides what a run's improvement is measured against.

In order: a timed task's pristine ``env/`` measured in the same call as the submission (a
runtime is only comparable with one measured beside it, :func:`scored_against`); else the fixed
``baseline`` of ``task.toml``; else the one ``labcoat baseline`` measured and stored for this
task's content (or, where measuring failed because the pristine starter cannot run, as
MLAgentBench's house-price and spaceship-titanic starters are left incomplete on purpose, the
task's fixed baseline from MLAgentBench's own code, :data:`environments.task.mlagentbench.TABLE`,
stored with the reason: :func:`fall_back`), ``$LABCOAT_HOME/baselines/<task>-<content hash>.json`` (a :class:`Measured`,
written and read back through that model), on the backend asked about (a runtime measured in
docker is not local's). Measuring is: ``env/`` copied to a scratch workspace, the task's
``solve`` scripts run there in the sandbox, the result evaluated like any submission
(:func:`environments.scoring.evaluate.evaluate`).
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from environments.record.runs import now
from environments.scoring.evaluate import EvalResult, error_summary, evaluate
from environments.task.home import labcoat_home
from environments.task.prepare import fingerprint
from environments.task.sandboxing import code_mounts, sandbox_limits
from environments.task.spec import TaskSpec
from environments.untrusted.words import metric
from sandbox import SandboxError, open_sandbox, resolve_kind
from sandbox.fs import WorkspaceFS, copy_tree, temporary_folder

BaselineSource = Literal["task.toml", "stored", "measured", "same call (paired)", "MLAgentBench"]


class BaselineError(RuntimeError):
    """Measuring a baseline failed and no fixed one is known; the message says why, briefly."""


class Measured(BaseModel):
    """A stored baseline (``labcoat baseline``): every run's value, their mean and spread."""

    task: str
    key: str = ""  # the task's content hash (task_key)
    backend: str | None = None
    values: list[float]
    mean: float
    std: float
    measured_at: str = Field(default_factory=now)
    # set when measuring failed: why, and ``mean`` is then the task's fixed baseline from
    # MLAgentBench's code (``values`` empty), stored so that scoring does not measure again
    fallback: str | None = None


class Baseline(BaseModel):
    """A task's baseline and where it came from (what ``labcoat check-task`` shows)."""

    value: float
    source: BaselineSource
    why: str = ""  # said beside the score: which baseline this is and why it was used


def improvement(value: float, baseline: float, higher_is_better: bool) -> float:
    """Relative gain over the baseline in the metric's direction (MLAgentBench's definition)."""
    gain = (value - baseline) if higher_is_better else (baseline - value)
    return gain / max(abs(baseline), 1e-12)


def task_key(task: TaskSpec) -> str:
    """The task's content hash: a prepared copy is named after it (``<name>-<hash>``), else the
    folder is hashed. Two folders with one name (the suite's vectorization, MLAgentBench's) never
    share a stored baseline."""
    suffix = task.root.name.rsplit("-", 1)[-1]
    if re.fullmatch(r"[0-9a-f]{16}", suffix) and task.root.name.startswith(task.name):
        return suffix
    return fingerprint(task.root)


def baseline_path(task: TaskSpec) -> Path:
    return labcoat_home() / "baselines" / f"{task.name}-{task_key(task)}.json"


def _backend(sandbox: str | None) -> str | None:
    try:
        return resolve_kind(sandbox) if sandbox else None
    except SandboxError:
        return None


def read_baseline(task: TaskSpec) -> Measured | None:
    """The stored baseline of this task's content, if any. One that does not validate (a torn
    write, an older layout) counts as none: :func:`ensure_baseline` measures and replaces it."""
    path = baseline_path(task)
    try:
        return Measured.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValidationError:
        return None


def find_baseline(task: TaskSpec, sandbox: str | None = None) -> Baseline | None:
    """The fixed baseline of task.toml, else the stored one; with ``sandbox``, only one stored
    from that backend (or from an unrecorded one)."""
    if task.baseline is not None:
        return Baseline(value=task.baseline, source="task.toml", why="fixed in task.toml")
    stored = read_baseline(task)
    if stored is None:
        return None
    backend = _backend(sandbox)
    if backend and stored.backend and stored.backend != backend:
        return None
    if stored.fallback is not None:
        return Baseline(value=stored.mean, source="MLAgentBench", why=stored.fallback)
    return Baseline(value=stored.mean, source="stored",
                    why=measured_why(stored, f"on {stored.backend or 'this machine'}"))


def measured_why(measured: Measured, where: str) -> str:
    """How a measured baseline was made, said where the score is shown: of several runs it is
    their mean ± std, so an unchanged starting script scores a little off 0% by noise alone."""
    n = len(measured.values)
    if n < 2:
        return f"the unmodified task measured once {where}"
    return (f"the mean of {n} runs of the unmodified task {where}, ± {metric(measured.std)} (std): "
            "an unchanged script scores within that noise of 0%, not exactly 0%")


def known_baseline(task: TaskSpec, sandbox: str | None = None) -> float | None:
    """:func:`find_baseline`'s value."""
    found = find_baseline(task, sandbox)
    return found.value if found is not None else None


def scored_against(task: TaskSpec, result: EvalResult, sandbox: str | None = None) -> Baseline | None:
    """What one evaluation is scored against, and why: the pristine ``env/`` measured in the
    same call (a timed task), else the task's known baseline on ``sandbox``."""
    if result.baseline is not None:
        return Baseline(value=result.baseline, source="same call (paired)",
                        why="the pristine env/ timed in the same call")
    return find_baseline(task, sandbox)


def fixed_fallback(task: TaskSpec) -> tuple[float, str] | None:
    """The task's fixed baseline in MLAgentBench's code and where it is stated, for a folder
    recognised as that task by content (a folder only named like one gets none)."""
    known = task.mlagentbench
    if known is None or known.by != "content" or known.entry.baseline is None:
        return None
    return known.entry.baseline, known.entry.baseline_from


def fall_back(task: TaskSpec, err: Exception, sandbox: str | None = None) -> Baseline:
    """Measuring failed (``err``): the task's fixed baseline from MLAgentBench's code, stored
    with the reason so that scoring says it and does not measure again; :class:`BaselineError`
    (brief, no traceback) when the task has none."""
    reason = error_summary(str(err))
    if isinstance(err, SandboxError):  # the sandbox or the task's environment, not the task
        raise BaselineError(f"{task.name}: measuring the baseline could not run ({reason}): that "
                            "says nothing of the task, so no baseline is stored or assumed; fix it "
                            "and run `labcoat baseline` again") from err
    fixed = fixed_fallback(task)
    if fixed is None:
        raise BaselineError(f"{task.name}: measuring the baseline failed ({reason}) and no fixed "
                            "baseline is known (task.toml's baseline = ... sets one)") from err
    value, where = fixed
    why = f"the unmodified task cannot run ({reason}): MLAgentBench's fixed baseline, {where}"
    store_baseline(task, Measured(task=task.name, key=task_key(task), backend=_backend(sandbox),
                                  values=[], mean=value, std=0.0, fallback=why))
    return Baseline(value=value, source="MLAgentBench", why=why)


def ensure_baseline(task: TaskSpec, runs: int = 3, sandbox: str = "auto",
                    on_measure: Callable[[str], None] | None = None) -> float | None:
    """The task's baseline; measured (``runs`` times) and stored first when none is known.

    Machine-dependent metrics (a runtime) cannot ship a fixed baseline, and without one no run
    could have an improvement, so the first scoring on a machine measures it once. Where the
    unmodified task cannot run, MLAgentBench's fixed baseline for it (:func:`fall_back`), else
    :class:`BaselineError`. None for a task that has no ``eval.py`` (never scored).
    """
    found = find_baseline(task, sandbox)
    if found is not None:
        return found.value
    if not task.has_eval:
        return None
    if on_measure:
        on_measure(task.name)
    try:
        measured = summarise(task, measure(task, runs=runs, sandbox=sandbox), sandbox)
    except (RuntimeError, SandboxError, OSError) as err:
        return fall_back(task, err, sandbox).value
    store_baseline(task, measured)
    return measured.mean


def decide_baseline(task: TaskSpec, sandbox: str = "auto", runs: int = 1) -> Baseline:
    """The known baseline, else the unmodified task measured now (not stored), else, where it
    cannot run, :func:`fall_back`'s (``labcoat check-task``)."""
    found = find_baseline(task)
    if found is not None:
        return found
    try:
        measured = summarise(task, measure(task, runs=runs, sandbox=sandbox))
    except (RuntimeError, SandboxError, OSError) as err:
        return fall_back(task, err, sandbox)
    return Baseline(value=measured.mean, source="measured", why=measured_why(measured, "now"))


def run_solve(task: TaskSpec, workspace: Path, sandbox: str = "auto") -> None:
    """Run the task's ``solve`` scripts in the sandbox (how baseline/reference make submissions)."""
    with open_sandbox(sandbox, workspace, sandbox_limits(task), code_mounts()) as sb:
        for script in task.solve:
            r = sb.exec([sb.python, script])
            if not r.ok:
                how = "timed out" if r.timed_out else f"exit {r.exit_code}"
                raise RuntimeError(f"{task.name}: {script} failed ({how}):\n"
                                   f"{(r.stderr or r.stdout)[-2000:]}")


def solved_workspace(task: TaskSpec, dest: Path, overlay: Path | None = None,
                     sandbox: str = "auto") -> Path:
    """``env/`` (and ``overlay``, a ``reference/``, over it) copied into a new workspace ``dest``
    by descriptor (links kept as links, modes kept), then ``solve`` run there."""
    for src in (task.env_dir, overlay):
        if src is not None:
            copy_tree(WorkspaceFS(src), WorkspaceFS(dest), links=True, mode=lambda m: m & 0o777)
    run_solve(task, dest, sandbox)
    return dest


def measure(task: TaskSpec, overlay: Path | None = None, runs: int = 1, sandbox: str = "auto",
            progress=None) -> list[float]:
    """Score ``env/`` (+ ``overlay``) after running ``solve``, ``runs`` times."""
    values = []
    for i in range(runs):
        with temporary_folder("labcoat-measure-") as tmp:
            result = evaluate(task, solved_workspace(task, tmp / "workspace", overlay, sandbox), sandbox)
        if result.value is None:
            raise RuntimeError(f"{task.name}: evaluation failed ({result.failure}): {result.detail}")
        values.append(result.value)
        if progress:
            progress(i + 1, runs, result.value)
    return values


def summarise(task: TaskSpec, values: list[float], sandbox: str | None = None) -> Measured:
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return Measured(task=task.name, key=task_key(task), backend=_backend(sandbox), values=values,
                    mean=statistics.fmean(values), std=std)


def store_baseline(task: TaskSpec, measured: Measured) -> Path:
    """Written whole or not at all (a temporary file renamed over it): two labcoat processes
    sharing a home may measure the same task at once, and a reader must never see half."""
    path = baseline_path(task)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(measured.model_dump_json(indent=2))
    os.replace(tmp, path)
    return path
