"""Scoring a workspace the way a benchmark must: in the sandbox, with pristine task files.

The workspace (a run's final or any step's snapshot) is copied to a scratch folder, the task's
read-only files are laid over it from the pristine ``env/``, and ``get_score`` is imported from
the task's own ``scripts/`` (mounted read-only, never from the workspace) and run in the
sandbox. The score travels back on a line tagged with a random nonce that the workspace's
code cannot know in advance, so printing a fake score does nothing.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from environments.environment import code_mounts, sandbox_limits
from environments.prepare import labcoat_home
from environments.runs import RunDir, now
from environments.snapshots import walk_files
from environments.task import TaskSpec
from sandbox import Mount, SandboxError, open_sandbox

TASK_SCRIPTS = "/task/scripts"
FailureReason = Literal["no_submission", "eval_error", "timeout", "infrastructure"]

# Runs inside the sandbox. The nonce is read from stdin before any task or workspace code runs.
_RUNNER = r"""
import importlib.util, json, os, sys
nonce = sys.stdin.readline().strip()
scripts, folder = sys.argv[1], sys.argv[2]
sys.path.insert(0, scripts)
spec = importlib.util.spec_from_file_location("labcoat_task_eval", os.path.join(scripts, "eval.py"))
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
try:
    value = float(mod.get_score(folder))
except FileNotFoundError as e:
    print(f"\nLABCOAT_NO_SUBMISSION {nonce} {e}", flush=True)
    raise
print(f"\nLABCOAT_SCORE {nonce} {json.dumps(value)}", flush=True)
"""


class EvalResult(BaseModel):
    value: float | None = None
    seconds: float = 0.0
    failure: FailureReason | None = None
    detail: str = ""


class Score(BaseModel):
    """``score.json``: one scored snapshot against the task's baseline."""

    task: str
    metric: str
    direction: str
    value: float | None
    baseline: float | None
    improvement: float | None
    success: bool
    threshold: float
    step: int | None = None
    eval_seconds: float = 0.0
    failure: FailureReason | None = None
    detail: str = ""
    scored_at: str = Field(default_factory=now)


def improvement(value: float, baseline: float, higher_is_better: bool) -> float:
    """Relative gain in the metric's direction (MLAgentBench's definition)."""
    gain = (value - baseline) if higher_is_better else (baseline - value)
    return gain / max(abs(baseline), 1e-12)


def lay_read_only(task: TaskSpec, folder: Path) -> None:
    """Overwrite the task's read-only files in ``folder`` with their pristine copies."""
    for rel, src in walk_files(task.env_dir):
        if task.is_read_only(rel):
            dest = folder / rel
            if dest.is_symlink() or dest.is_dir():
                shutil.rmtree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)


def evaluate(task: TaskSpec, workspace: Path, sandbox: str = "auto") -> EvalResult:
    """Run the task's ``get_score`` on a scratch copy of ``workspace``."""
    with tempfile.TemporaryDirectory(prefix="labcoat-score-") as tmp:
        scratch = Path(tmp) / "workspace"
        shutil.copytree(workspace, scratch, symlinks=True)
        lay_read_only(task, scratch)
        limits = sandbox_limits(task).model_copy(update={"timeout": task.limits.eval_timeout})
        mounts = [*code_mounts(), Mount(source=task.scripts_dir, target=TASK_SCRIPTS)]
        nonce = secrets.token_hex(16)
        try:
            with open_sandbox(sandbox, scratch, limits, mounts) as sb:
                result = sb.exec(
                    [sb.python, "-c", _RUNNER, sb.path_for(TASK_SCRIPTS), sb.workdir],
                    stdin=nonce + "\n",
                )
        except (SandboxError, OSError, ValueError) as err:
            return EvalResult(failure="infrastructure", detail=f"{type(err).__name__}: {err}")
    if result.timed_out:
        return EvalResult(seconds=result.seconds, failure="timeout",
                          detail=f"eval.py ran past {task.limits.eval_timeout:g} s")
    found = re.findall(rf"^LABCOAT_SCORE {nonce} (\S+)$", result.stdout, re.M)
    if found and result.exit_code == 0:
        value = json.loads(found[-1])
        return EvalResult(value=value, seconds=result.seconds)
    tail = (result.stderr or result.stdout)[-2000:]
    if re.search(rf"^LABCOAT_NO_SUBMISSION {nonce}", result.stdout, re.M):
        return EvalResult(seconds=result.seconds, failure="no_submission", detail=tail)
    reason = "out of memory; " if result.oom_killed else ""
    return EvalResult(seconds=result.seconds, failure="eval_error",
                      detail=f"{reason}eval.py exited {result.exit_code}: {tail}")


def baseline_path(task: TaskSpec) -> Path:
    return labcoat_home() / "baselines" / f"{task.name}.json"


def known_baseline(task: TaskSpec) -> float | None:
    """The fixed baseline of task.toml, else the one ``labcoat baseline`` measured."""
    if task.baseline is not None:
        return task.baseline
    path = baseline_path(task)
    if path.exists():
        return float(json.loads(path.read_text())["mean"])
    return None


def make_score(task: TaskSpec, result: EvalResult, step: int | None) -> Score:
    baseline = known_baseline(task)
    imp = None
    if result.value is not None and baseline is not None:
        imp = improvement(result.value, baseline, task.higher_is_better)
    detail = result.detail
    if baseline is None and result.value is not None:
        detail = "no baseline known: run `labcoat baseline` for this task"
    return Score(
        task=task.name, metric=task.metric, direction=task.direction, value=result.value,
        baseline=baseline, improvement=imp, success=imp is not None and imp >= task.success_threshold,
        threshold=task.success_threshold, step=step, eval_seconds=round(result.seconds, 3),
        failure=result.failure, detail=detail,
    )


def score_run(run: RunDir, task: TaskSpec, step: int | None = None, sandbox: str = "auto") -> Score:
    """Score step ``step``'s snapshot (default: the last) and write ``score.json``."""
    steps = run.steps()
    index = len(steps) if step is None else step
    with tempfile.TemporaryDirectory(prefix="labcoat-restore-") as tmp:
        try:
            run.restore(index, Path(tmp))
        except Exception as err:  # noqa: BLE001 - a broken snapshot is an infrastructure failure
            result = EvalResult(failure="infrastructure", detail=f"cannot restore step {index}: {err}")
        else:
            result = evaluate(task, Path(tmp), sandbox)
    score = make_score(task, result, index)
    if step is None:
        run.write_json("score.json", score.model_dump())
    return score


def run_solve(task: TaskSpec, workspace: Path, sandbox: str = "auto") -> None:
    """Run the task's ``solve`` scripts in the sandbox (how baseline/reference make submissions)."""
    with open_sandbox(sandbox, workspace, sandbox_limits(task), code_mounts()) as sb:
        for script in task.solve:
            r = sb.exec([sb.python, script])
            if not r.ok:
                raise RuntimeError(f"{task.name}: {script} failed (exit {r.exit_code}, "
                                   f"timed_out={r.timed_out}):\n{(r.stderr or r.stdout)[-2000:]}")


def measure(task: TaskSpec, overlay: Path | None = None, runs: int = 1, sandbox: str = "auto",
            progress=None) -> list[float]:
    """Score ``env/`` (+ ``overlay``) after running ``solve``, ``runs`` times."""
    values = []
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="labcoat-measure-") as tmp:
            ws = Path(tmp) / "workspace"
            shutil.copytree(task.env_dir, ws)
            if overlay is not None:
                shutil.copytree(overlay, ws, dirs_exist_ok=True)
            run_solve(task, ws, sandbox)
            result = evaluate(task, ws, sandbox)
        if result.value is None:
            raise RuntimeError(f"{task.name}: evaluation failed ({result.failure}): {result.detail}")
        values.append(result.value)
        if progress:
            progress(i + 1, runs, result.value)
    return values


class Measured(BaseModel):
    task: str
    values: list[float]
    mean: float
    std: float
    measured_at: str = Field(default_factory=now)


def summarise(task: TaskSpec, values: list[float]) -> Measured:
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return Measured(task=task.name, values=values, mean=statistics.fmean(values), std=std)


def store_baseline(task: TaskSpec, measured: Measured) -> Path:
    path = baseline_path(task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(measured.model_dump_json(indent=2))
    return path


class TaskCheck(BaseModel):
    task: str
    baseline: float
    baseline_source: str
    reference: float
    improvement: float
    threshold: float
    passed: bool
    seconds: float


def check_task(task: TaskSpec, sandbox: str = "auto", runs: int = 1) -> TaskCheck:
    """Baseline (fixed, stored, or measured now) against ``reference/``: must beat the threshold."""
    start = time.perf_counter()
    if not task.reference_dir.is_dir():
        raise RuntimeError(f"{task.root}: no reference/ solution to check")
    baseline = known_baseline(task)
    source = "task.toml" if task.baseline is not None else "stored"
    if baseline is None:
        baseline = summarise(task, measure(task, runs=runs, sandbox=sandbox)).mean
        source = "measured"
    reference = statistics.fmean(measure(task, task.reference_dir, runs=runs, sandbox=sandbox))
    imp = improvement(reference, baseline, task.higher_is_better)
    return TaskCheck(task=task.name, baseline=baseline, baseline_source=source, reference=reference,
                     improvement=imp, threshold=task.success_threshold,
                     passed=imp >= task.success_threshold, seconds=time.perf_counter() - start)
