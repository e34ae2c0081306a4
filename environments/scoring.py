"""Scoring a workspace the way a benchmark must: in the sandbox, with pristine task files.

The workspace (a run's final or any step's snapshot) is copied to a scratch folder, the task's
read-only files are laid over it from the pristine ``env/``, and ``get_score`` is imported from
the task's own ``scripts/`` (mounted read-only, never from the workspace) and run in the
sandbox. A trusted runner (``python -I``: the workspace is not on ``sys.path``) starts a child
that calls the task's function and hands the value back on a private pipe; only after the
child has exited does the runner read a random nonce from its stdin and print the value on a
line tagged with it, so nothing the workspace's code prints (or finds in memory) counts.
Symlinks are dropped from the scratch copy, so a link into the task's private files is no
submission. Each step's score is recorded (``scores.json``), the last one as ``score.json``.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from environments import timing
from environments.anchors import load_anchors, normalize
from environments.limits import LimitError, loads_json
from environments.prepare import fingerprint, labcoat_home
from environments.runs import RunDir, now
from environments.safefs import WorkspaceError, WorkspaceFS, copy_tree, scratch_mode, temporary_folder
from environments.sandboxing import code_mounts, sandbox_limits
from environments.submission import (
    CHALLENGE,
    Produced,
    collect_outputs,
    has_produce,
    open_produce,
    produce_dir,
    run_interactive,
    run_produce,
    strip_code,
)
from environments.task import TaskSpec
from environments.timing import Paired
from sandbox import Mount, SandboxError, open_sandbox, resolve_kind

TASK_SCRIPTS = "/task/scripts"
FailureReason = Literal["no_submission", "eval_error", "timeout", "infrastructure"]

# Runs inside the sandbox as ``python -I`` (no workspace on sys.path, so a workspace ``json.py``
# or ``numpy.py`` shadows nothing). It never imports task or workspace code itself: a child
# process does, with stdin closed, and hands the value back on a private pipe. Only after the
# child has exited does this process read the nonce (from its own stdin, which the child could
# not read) and print the tagged line. It is made non-dumpable first, so nothing the child leaves
# running can read its memory or file descriptors through /proc. Code that eval.py imports from
# the workspace can therefore print what it likes: without the nonce, no line it prints counts.
_RUNNER = r"""
import json, os, subprocess, sys
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
except Exception:
    pass
scripts, folder, function = sys.argv[1], sys.argv[2], sys.argv[3]
read_fd, write_fd = os.pipe()
child = subprocess.Popen([sys.executable, "-I", "-c", sys.argv[4], scripts, folder, function,
                          str(write_fd), os.environ.get("PYTHONPATH", ""), sys.argv[5]],
                         stdin=subprocess.DEVNULL, pass_fds=(write_fd,))
os.close(write_fd)
with os.fdopen(read_fd, "rb") as pipe:
    report = pipe.read(1 << 16)
code = child.wait()
nonce = sys.stdin.readline().strip()
try:
    report = json.loads(report.decode().strip().splitlines()[-1])
except Exception:
    report = {"error": "the evaluation child gave no report"}
print(f"\nLABCOAT_RESULT {nonce} {json.dumps({**report, 'exit': code})}", flush=True)
"""

# The child: imports eval.py by path from the pristine scripts folder and calls the function.
_CHILD = r"""
import importlib.util, json, os, sys, traceback
scripts, folder, function, fd, pythonpath, each = sys.argv[1:7]
out = os.fdopen(int(fd), "w")
os.environ["LABCOAT_PHASE"] = "trusted"  # methods._submission.load_submission refuses
sys.path[:0] = [scripts] + [p for p in pythonpath.split(":") if p]
try:
    os.chdir(folder)
    spec = importlib.util.spec_from_file_location("labcoat_task_eval", os.path.join(scripts, "eval.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, function):
        raise AttributeError(f"eval.py defines no {function}()")
    fn = getattr(mod, function)
    if each == "1":  # a timed task: the same check on every repeat's outputs
        values = [float(fn(os.path.join(folder, d))) for d in sorted(os.listdir(folder))
                  if d.startswith("rep")]
        if not values or len(set(values)) != 1:
            raise ValueError(f"{function}() gave {values} over the repeats, not one value")
        value = values[0]
    else:
        value = float(fn(folder))
    report = {"value": value}
except FileNotFoundError as e:
    traceback.print_exc()
    report = {"no_submission": str(e)}
except BaseException as e:
    traceback.print_exc()
    report = {"error": f"{type(e).__name__}: {e}"}
sys.stdout.flush()
out.write("\n" + json.dumps(report) + "\n")
out.flush()
"""


class EvalResult(BaseModel):
    value: float | None = None
    seconds: float = 0.0
    failure: FailureReason | None = None
    detail: str = ""
    # what the actor may see (Validate Submission): the submission phase's own output and the
    # failure reason, never the trusted phase's (it may print the hidden scripts/)
    public_detail: str = ""
    baseline: float | None = None  # measured in the same call (timed tasks)
    paired: Paired | None = None


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
    # timed tasks: the improvement's 95% interval from the paired comparison in this call
    interval: tuple[float, float] | None = None
    # 0 = the task's baseline anchor, 1 = its reference anchor (anchors.toml, versioned)
    normalized: float | None = None
    scored_at: str = Field(default_factory=now)


def improvement(value: float, baseline: float, higher_is_better: bool) -> float:
    """Relative gain in the metric's direction (MLAgentBench's definition)."""
    gain = (value - baseline) if higher_is_better else (baseline - value)
    return gain / max(abs(baseline), 1e-12)


def lay_read_only(task: TaskSpec, folder: Path) -> None:
    """Overwrite the task's read-only files in ``folder`` with their pristine copies.

    By descriptor on both sides (:mod:`environments.safefs`): whatever stands at a read-only
    name (a folder, a link) is removed, never followed, and a link on the way to one is
    refused, so the host (often root) cannot be steered into writing a host folder."""
    pristine, fs = WorkspaceFS(task.env_dir), WorkspaceFS(folder)
    for rel, st in pristine.walk().files:
        if task.is_read_only(rel):
            if fs.kind(rel) not in (None, "file"):
                fs.remove_tree(rel)
            fs.write(rel, pristine.chunks(rel), mode=scratch_mode(st.st_mode))


def _copy_files(source: Path, dest: Path) -> None:
    """The regular files of ``source`` into ``dest``, both by descriptor
    (:func:`environments.safefs.copy_tree`): a live workspace (Validate Submission) may hold
    symlinks (one to ``/task/scripts/answers`` must not become a submission), FIFOs or a very
    deep tree, and none of them may reach, block or crash scoring; and ``dest`` may be a
    sandbox's workspace between two commands (a timed task's repeats), so nothing there is
    followed either."""
    copy_tree(WorkspaceFS(source), WorkspaceFS(dest))


TRUSTED_FUNCTION = {"get_score": "score", "get_validation_score": "validation_score"}


def _scratch(task: TaskSpec, source: Path, dest: Path) -> Path:
    """A copy of ``source`` with its links dropped and the read-only files laid back."""
    _copy_files(source, dest)
    lay_read_only(task, dest)
    return dest


def evaluate(task: TaskSpec, workspace: Path, sandbox: str = "auto",
             function: str = "get_score", timeout: float | None = None) -> EvalResult:
    """Score a scratch copy of ``workspace`` under the contract of ``environments/submission.py``.

    Nothing in ``workspace`` is trusted: read-only files are laid over it from the task's
    ``env/``; a task with ``scripts/produce.py`` runs it in a submission phase that has no
    result channel, and its pristine ``eval.py`` scores only the outputs, in a second sandbox,
    the value taken only from a line tagged with a nonce the submission never sees.
    """
    timeout = timeout or task.limits.eval_timeout
    with temporary_folder("labcoat-score-") as tmp:
        try:
            scratch = _scratch(task, workspace, tmp / "workspace")
        except (OSError, WorkspaceError) as err:
            return EvalResult(failure="infrastructure", detail=f"cannot copy the workspace: {err}")
        if not has_produce(task.scripts_dir):  # data-only: the scorer never sees code
            strip_code(scratch, keep=task.is_read_only)
            return _trusted(task, scratch, sandbox, function, timeout)
        challenge = secrets.token_hex(16)
        try:
            here = produce_dir(task.scripts_dir, tmp / "produce", challenge)
            if task.timed:
                return _timed(task, workspace, tmp, here, challenge, sandbox, function, timeout)
            if task.oracle is not None:
                produced, seen = run_interactive(
                    sandbox, scratch, here, _limits(task, timeout), code_mounts(), task.scripts_dir,
                    tmp / "oracle", challenge, task.oracle.max_requests, task.oracle.max_bytes)
                if seen.oracle_failed:
                    return EvalResult(failure="eval_error", seconds=produced.seconds,
                                      detail=seen.oracle_failed,
                                      public_detail="the task's oracle failed")
                if seen.refused:
                    detail = f"{seen.refused}\n{produced.tail}".strip()
                    return EvalResult(failure="eval_error", seconds=produced.seconds,
                                      detail=detail, public_detail=detail)
            else:
                produced = run_produce(sandbox, scratch, here, _limits(task, timeout), code_mounts())
            if not produced.ok:
                return _produce_failure(produced, timeout)
            collect_outputs(scratch, tmp / "outputs", challenge)
        except (SandboxError, OSError, ValueError) as err:
            return EvalResult(failure="infrastructure", detail=f"{type(err).__name__}: {err}")
        result = _trusted(task, tmp / "outputs", sandbox, TRUSTED_FUNCTION.get(function, function),
                          timeout)
        return result.model_copy(update={
            "seconds": result.seconds + produced.seconds, "public_detail": produced.tail[-2000:]
            + (f"\n{result.failure}: scoring the outputs failed" if result.failure else "")})


def _limits(task: TaskSpec, timeout: float):
    return sandbox_limits(task).model_copy(update={"timeout": timeout})


def _produce_failure(produced: Produced, timeout: float) -> EvalResult:
    if produced.timed_out:
        failure, why = "timeout", f"the submission ran past {timeout:g} s"
    elif produced.no_submission:
        failure, why = "no_submission", "the submission's file is missing"
    else:
        failure = "eval_error"
        why = "out of memory" if produced.oom else "the submission failed"
    detail = f"{why}:\n{produced.tail}".strip()
    return EvalResult(seconds=produced.seconds, failure=failure, detail=detail, public_detail=detail)


def _timed(task: TaskSpec, workspace: Path, tmp: Path, here: Path, challenge: str, sandbox: str,
           function: str, timeout: float) -> EvalResult:
    """A runtime: the submission and the pristine ``env/`` alternately, paired (``timing.py``).

    Each side keeps one sandbox (a command costs milliseconds, a new namespace more); every
    repeat gets a new challenge, so nothing cached by an earlier repeat answers a later one;
    the order within a pair alternates (A B, B A, ...) so that going first or second (a warm
    page cache, a CPU frequency step) does not bias the ratio.
    """
    limits, mounts = _limits(task, timeout), code_mounts()
    spaces = {"a": _scratch(task, workspace, tmp / "a"), "b": _scratch(task, task.env_dir, tmp / "b")}
    times: dict[str, list[float]] = {"a": [], "b": []}
    deadline = time.monotonic() + timeout / 2
    spent = 0.0
    with (open_produce(sandbox, spaces["a"], here, limits, mounts) as sa,
          open_produce(sandbox, spaces["b"], here, limits, mounts) as sbx):
        boxes = {"a": sa, "b": sbx}
        for i in range(timing.MAX_PAIRS):
            rep = f"{challenge}{i:04x}"
            WorkspaceFS(here).write(CHALLENGE, rep.encode(), mode=0o644)
            for side in (("a", "b") if i % 2 == 0 else ("b", "a")):  # ABBA: no order bias
                produced = run_produce(sandbox, spaces[side], here, limits, mounts, sb=boxes[side])
                spent += produced.seconds
                if not produced.ok:
                    if side == "b":
                        return EvalResult(failure="infrastructure", seconds=spent,
                                          detail=f"the pristine env/ failed:\n{produced.tail}")
                    return _produce_failure(produced, timeout)
                times[side].append(produced.seconds)
                if side == "a":
                    collect_outputs(spaces["a"], tmp / "outputs" / f"rep{i:02d}", rep)
                    reset_workspace(task, workspace, spaces["a"], sa)
            paired = timing.compare(times["a"], times["b"], task.higher_is_better)
            if timing.settled(paired, task.success_threshold) or (
                    i + 1 >= timing.MIN_PAIRS and time.monotonic() > deadline):
                break
    checked = _trusted(task, tmp / "outputs", sandbox, TRUSTED_FUNCTION.get(function, function),
                       timeout, each=True)
    if checked.value is None:
        return checked.model_copy(update={"seconds": checked.seconds + spent})
    work = checked.value
    ga, gb = timing.geometric_mean(times["a"]), timing.geometric_mean(times["b"])
    value, base = (work / ga, work / gb) if task.higher_is_better else (ga / work, gb / work)
    detail = (f"{len(times['a'])} interleaved pairs: submission {ga:.4g} s, pristine env/ {gb:.4g} s "
              f"(geometric means); improvement {paired.improvement:+.1%}, 95% t-interval "
              f"[{paired.improvement_low:+.1%}, {paired.improvement_high:+.1%}]")
    return EvalResult(value=value, baseline=base, paired=paired, seconds=spent + checked.seconds,
                      detail=detail, public_detail=detail)


_EMPTY_TMP = r"""
import glob, os, shutil
for top in ("/tmp", "/dev/shm"):
    for path in glob.glob(top + "/*") + glob.glob(top + "/.*"):
        try:
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
        except OSError:
            pass
"""


def reset_workspace(task: TaskSpec, source: Path, space: Path, sb) -> None:
    """Between repeats: the submission's workspace as submitted again, its temporary folders
    emptied, so a repeat cannot answer from what an earlier one left behind (untimed).

    ``space`` is the open sandbox's workspace: it is emptied and laid again by descriptor
    only, and only between two commands (when the sandbox holds no process)."""
    sb.exec([sb.python, "-I", "-S", "-c", _EMPTY_TMP])
    WorkspaceFS(space).clear()
    _scratch(task, source, space)


def _trusted(task: TaskSpec, folder: Path, sandbox: str, function: str, timeout: float,
             each: bool = False) -> EvalResult:
    """Phase (b): the task's pristine ``eval.py`` over ``folder`` (outputs, or data-only files)."""
    limits = _limits(task, timeout)
    mounts = [*code_mounts(), Mount(source=task.scripts_dir, target=TASK_SCRIPTS)]
    nonce = secrets.token_hex(16)
    try:
        with open_sandbox(sandbox, folder, limits, mounts) as sb:
            result = sb.exec(
                [sb.python, "-I", "-c", _RUNNER, sb.path_for(TASK_SCRIPTS), sb.workdir,
                 function, _CHILD, "1" if each else "0"],
                stdin=nonce + "\n",
            )
    except (SandboxError, OSError, ValueError) as err:
        return EvalResult(failure="infrastructure", detail=f"{type(err).__name__}: {err}")
    if result.timed_out:
        return EvalResult(seconds=result.seconds, failure="timeout",
                          detail=f"eval.py ran past {timeout:g} s")
    found = re.findall(rf"^LABCOAT_RESULT {nonce} (.+)$", result.stdout, re.MULTILINE)
    tail = (result.stderr or result.stdout)[-2000:]
    if not found:
        # The trusted runner always prints its line unless it could not start (infrastructure)
        # or something killed it: the memory cap, or the evaluated code (an eval error).
        if result.exit_code in (126, 127) and not result.oom_killed:
            return EvalResult(seconds=result.seconds, failure="infrastructure",
                              detail=f"the scoring interpreter did not start (exit {result.exit_code}): {tail}")
        why = "out of memory" if result.oom_killed else (
            f"the scoring process died (exit {result.exit_code}) before reporting")
        return EvalResult(seconds=result.seconds, failure="eval_error", detail=f"{why}: {tail}")
    try:  # the runner's line; what the evaluated code wrote shaped it (a report nested deep)
        report = loads_json(found[-1], max_bytes=1 << 20, max_depth=32, what="the scoring report")
    except LimitError as err:
        return EvalResult(seconds=result.seconds, failure="eval_error", detail=f"{err}\n{tail}")
    if "no_submission" in report:
        return EvalResult(seconds=result.seconds, failure="no_submission",
                          detail=f"{report['no_submission']}\n{tail}".strip())
    value = report.get("value")
    if report.get("exit") == 0 and isinstance(value, (int, float)) and math.isfinite(value):
        return EvalResult(value=float(value), seconds=result.seconds)
    reason = "out of memory; " if result.oom_killed else ""
    problem = report.get("error") or f"{function}() returned {value!r}, not a finite number"
    return EvalResult(seconds=result.seconds, failure="eval_error",
                      detail=f"{reason}{problem}\n{tail}".strip())


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


def known_baseline(task: TaskSpec, sandbox: str | None = None) -> float | None:
    """The fixed baseline of task.toml, else the one ``labcoat baseline`` measured for this
    task's content; with ``sandbox``, only one measured on that backend (a runtime measured in
    docker is not local's)."""
    if task.baseline is not None:
        return task.baseline
    path = baseline_path(task)
    if path.exists():
        data = json.loads(path.read_text())
        backend = _backend(sandbox)
        if backend and data.get("backend") and data["backend"] != backend:
            return None
        return float(data["mean"])
    return None


def ensure_baseline(task: TaskSpec, runs: int = 3, sandbox: str = "auto",
                    on_measure: Callable[[str], None] | None = None) -> float:
    """The task's baseline; measured (``runs`` times) and stored first when none is known.

    Machine-dependent metrics (a runtime) cannot ship a fixed baseline, and without one no run
    could have an improvement, so the first scoring on a machine measures it once.
    """
    value = known_baseline(task, sandbox)
    if value is None:
        if on_measure:
            on_measure(task.name)
        measured = summarise(task, measure(task, runs=runs, sandbox=sandbox), sandbox)
        store_baseline(task, measured)
        value = measured.mean
    return value


def normalized_score(task: TaskSpec, result: EvalResult) -> float | None:
    log_ratio = result.paired.mean_log_ratio if result.paired is not None else None
    try:
        return normalize(load_anchors(task.root), result.value, log_ratio)
    except (OSError, ValueError):
        return None


def make_score(task: TaskSpec, result: EvalResult, step: int | None,
               sandbox: str | None = None) -> Score:
    """The score of one evaluation. A timed task's baseline is the pristine ``env/`` measured in
    the same call, and success needs the pessimistic end of its interval past the threshold."""
    paired = result.paired
    baseline = result.baseline if result.baseline is not None else known_baseline(task, sandbox)
    imp = None
    if paired is not None:
        imp = paired.improvement
    elif result.value is not None and baseline is not None:
        imp = improvement(result.value, baseline, task.higher_is_better)
    detail = result.detail
    if baseline is None and result.value is not None:
        detail = "no baseline known: run `labcoat baseline` for this task"
    worst = paired.improvement_low if paired is not None else imp
    return Score(
        task=task.name, metric=task.metric, direction=task.direction, value=result.value,
        baseline=baseline, improvement=imp,
        success=worst is not None and worst >= task.success_threshold,
        threshold=task.success_threshold, step=step, eval_seconds=round(result.seconds, 3),
        failure=result.failure, detail=detail,
        interval=(paired.improvement_low, paired.improvement_high) if paired else None,
        normalized=normalized_score(task, result),
    )


def _restore_and_evaluate(run: RunDir, task: TaskSpec, index: int, sandbox: str) -> EvalResult:
    with temporary_folder("labcoat-restore-") as tmp:
        try:
            run.restore(index, tmp)
        except Exception as err:  # noqa: BLE001 - a broken snapshot is an infrastructure failure
            return EvalResult(failure="infrastructure", detail=f"cannot restore step {index}: {err}")
        return evaluate(task, tmp, sandbox)


def score_run(run: RunDir, task: TaskSpec, step: int | None = None, sandbox: str = "auto") -> Score:
    """Score step ``step``'s snapshot (default: the last) and record it.

    The last step's score is the run's result, ``score.json``; every scored step is also kept
    in ``scores.json`` (the improvement curve).
    """
    last = len(run.steps())
    index = last if step is None else step
    if not 0 <= index <= last:
        score = make_score(task, EvalResult(failure="infrastructure",
                                            detail=f"no step {index}: the run has {last} steps"), index)
        return score
    score = make_score(task, _restore_and_evaluate(run, task, index, sandbox), index, sandbox)
    _record(run, [score], final=index == last)
    return score


def pick_steps(n_steps: int, points: int | None = None) -> list[int]:
    """Steps 1..n (0 for a run with no steps), or ``points`` of them evenly spaced, last included."""
    if n_steps <= 0:
        return [0]
    every = list(range(1, n_steps + 1))
    if points is None or points >= n_steps:
        return every
    if points <= 1:
        return [n_steps]
    picked = {round(1 + i * (n_steps - 1) / (points - 1)) for i in range(points)}
    return sorted(picked)


def _manifest_key(run: RunDir, index: int) -> str | None:
    try:
        files = run.snapshots.load(f"{index:05d}").files
    except Exception:  # noqa: BLE001 - scored (and failed) individually below
        return None
    return json.dumps({k: v.sha for k, v in sorted(files.items())})


def score_steps(run: RunDir, task: TaskSpec, steps: list[int] | None = None,
                points: int | None = None, sandbox: str = "auto", progress=None) -> list[Score]:
    """Score several steps' snapshots (default: every step) so the run's curve exists.

    A step whose workspace is identical to an already scored one (a List Files, an Understand
    File) reuses that evaluation. Writes ``scores.json``, and ``score.json`` when the last
    step is among them.
    """
    last = len(run.steps())
    wanted = steps if steps is not None else pick_steps(last, points)
    seen: dict[str, EvalResult] = {}
    scores = []
    for i, index in enumerate(wanted):
        if not 0 <= index <= last:
            result = EvalResult(failure="infrastructure", detail=f"no step {index}: the run has {last} steps")
        else:
            key = _manifest_key(run, index)
            if key is not None and key in seen:
                result = seen[key]
            else:
                result = _restore_and_evaluate(run, task, index, sandbox)
                if key is not None and result.failure != "infrastructure":
                    seen[key] = result
        scores.append(make_score(task, result, index, sandbox))
        if progress:
            progress(i + 1, len(wanted), scores[-1])
    _record(run, scores, final=last in wanted)
    return scores


def load_scores(run_path: Path) -> dict[int, Score]:
    """Every step scored so far (``scores.json``, plus ``score.json``'s step), by step."""
    found: dict[int, Score] = {}
    path = Path(run_path) / "scores.json"
    if path.exists():
        for item in json.loads(path.read_text()).get("steps", []):
            s = Score.model_validate(item)
            if s.step is not None:
                found[s.step] = s
    final = Path(run_path) / "score.json"
    if final.exists():
        s = Score.model_validate_json(final.read_text())
        if s.step is not None:
            found.setdefault(s.step, s)
    return dict(sorted(found.items()))


def _record(run: RunDir, scores: list[Score], final: bool) -> None:
    merged = load_scores(run.path)
    for s in scores:
        if s.step is not None:
            merged[s.step] = s
    run.write_json("scores.json", {"steps": [s.model_dump() for s in sorted(
        merged.values(), key=lambda s: s.step)]})
    if final:
        last = max(scores, key=lambda s: s.step if s.step is not None else -1)
        run.write_json("score.json", last.model_dump())


def run_solve(task: TaskSpec, workspace: Path, sandbox: str = "auto") -> None:
    """Run the task's ``solve`` scripts in the sandbox (how baseline/reference make submissions)."""
    with open_sandbox(sandbox, workspace, sandbox_limits(task), code_mounts()) as sb:
        for script in task.solve:
            r = sb.exec([sb.python, script])
            if not r.ok:
                raise RuntimeError(f"{task.name}: {script} failed (exit {r.exit_code}, "
                                   f"timed_out={r.timed_out}):\n{(r.stderr or r.stdout)[-2000:]}")


def _task_workspace(task: TaskSpec, ws: Path, overlay: Path | None) -> Path:
    """``env/`` (and ``overlay`` over it) copied into a new workspace ``ws`` by descriptor
    (links kept as links, modes kept)."""
    for src in (task.env_dir, overlay):
        if src is not None:
            copy_tree(WorkspaceFS(src), WorkspaceFS(ws), links=True, mode=lambda m: m & 0o777)
    return ws


def measure(task: TaskSpec, overlay: Path | None = None, runs: int = 1, sandbox: str = "auto",
            progress=None) -> list[float]:
    """Score ``env/`` (+ ``overlay``) after running ``solve``, ``runs`` times."""
    values = []
    for i in range(runs):
        with temporary_folder("labcoat-measure-") as tmp:
            ws = _task_workspace(task, tmp / "workspace", overlay)
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
    key: str = ""  # the task's content hash (task_key)
    backend: str | None = None
    values: list[float]
    mean: float
    std: float
    measured_at: str = Field(default_factory=now)


def summarise(task: TaskSpec, values: list[float], sandbox: str | None = None) -> Measured:
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return Measured(task=task.name, key=task_key(task), backend=_backend(sandbox), values=values,
                    mean=statistics.fmean(values), std=std)


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
    if task.timed:
        return _check_timed(task, sandbox, start)
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


def _check_timed(task: TaskSpec, sandbox: str, start: float) -> TaskCheck:
    """A timed task: the reference against the pristine env/ in one paired scoring; it passes
    when the whole interval of its improvement is past the threshold."""
    with temporary_folder("labcoat-measure-") as tmp:
        ws = _task_workspace(task, tmp / "workspace", task.reference_dir)
        run_solve(task, ws, sandbox)
        result = evaluate(task, ws, sandbox)
    if result.value is None or result.paired is None:
        raise RuntimeError(f"{task.name}: evaluation failed ({result.failure}): {result.detail}")
    return TaskCheck(task=task.name, baseline=result.baseline, baseline_source="same call (paired)",
                     reference=result.value, improvement=result.paired.improvement,
                     threshold=task.success_threshold,
                     passed=result.paired.improvement_low >= task.success_threshold,
                     seconds=time.perf_counter() - start)
