"""Evaluating a workspace the way a benchmark must: in the sandbox, with pristine task files.

The workspace (a run's final or any step's snapshot, a live workspace, a solved ``env/``) is
copied to a scratch folder, the task's read-only files are laid over it from the pristine
``env/``, and ``get_score`` is imported from the task's own ``scripts/`` (mounted read-only,
never from the workspace) and run in the sandbox, with the pristine ``env/`` mounted read-only
beside it (``/task/env``): MLAgentBench's ``eval.py`` files reach ``../env`` next to their own
folder for the task's modules (amp-parkinsons' ``from train import smapep1``, fathomnet's
``metric``, identify-contrails' ``encode``, feedback's ``train``, CLRS's ``baselines``), as in
MLAgentBench, where ``eval.py`` sits in ``benchmarks/<task>/scripts/``. Only ``eval.py``'s own
path reaches it; the scored folder stays off ``sys.path``. The trusted runner
(:mod:`environments.in_sandbox.eval_runner`, ``python -I``: the workspace is not on
``sys.path``) starts a child (:mod:`environments.in_sandbox.eval_child`) that calls the task's
function and hands the value back on a private pipe; only after the child has exited does the
runner read a random nonce from its stdin and print the value on a line tagged with it, so
nothing the workspace's code prints (or finds in memory) counts. Symlinks are dropped from the
scratch copy, so a link into the task's private files is no submission. A task with
``scripts/produce.py`` runs the submission first, in its own sandbox
(``environments/scoring/submission.py``); a timed task runs it against the pristine ``env/`` in
interleaved pairs (``environments/scoring/timing.py``). What a result means for a run (its baseline,
improvement, success) is ``environments/scoring/score.py``'s. Several steps of a run in turn (a
data-only task's ``--all-steps``) keep one scratch and one trusted sandbox instead
(``environments/scoring/score_scratch.py``, which uses :func:`open_trusted` and :func:`run_trusted`).
"""

from __future__ import annotations

import math
import re
import secrets
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from environments.in_sandbox import eval_child, eval_runner, source
from environments.scoring import timing
from environments.scoring.scratch_sync import Scratch, plan, read_only_files
from environments.scoring.submission import (
    CHALLENGE,
    Interaction,
    Produced,
    collect_outputs,
    has_produce,
    open_produce,
    produce_dir,
    run_interactive,
    run_produce,
    strip_code,
)
from environments.scoring.timing import Paired
from environments.task.mlagentbench import NO_EVAL, failure_value
from environments.task.sandboxing import code_mounts, sandbox_limits
from environments.task.spec import TaskSpec
from environments.task.splits import FUNCTIONS, LEGACY_SEARCH, SplitName, function_for
from environments.untrusted.bounded import LimitError, loads_json
from sandbox import Mount, SandboxError, SandboxLimits, open_sandbox
from sandbox.fs import (
    WorkspaceError,
    WorkspaceFS,
    copy_tree,
    scratch_mode,
    temporary_folder,
)

TASK_SCRIPTS = "/task/scripts"
TASK_ENV = "/task/env"  # ``../env`` seen from TASK_SCRIPTS, as MLAgentBench lays a task out
# not_scored: the task has no eval.py (MLAgentBench's llama-inference, bibtex-generation, ...)
FailureReason = Literal["no_submission", "eval_error", "timeout", "infrastructure", "not_scored"]
#: the trusted phase's function for what the caller asked (a two-phase task's eval.py defines
#: ``score``/``search_score``/... over outputs, a data-only one ``get_score``/... over files)
TRUSTED_FUNCTION = {data: trusted for data, trusted in (*FUNCTIONS.values(), LEGACY_SEARCH)}
#: which split a function scores (what the submission phase is told: ``split.txt``)
SPLIT_OF = {f: split for split, pair in FUNCTIONS.items() for f in pair} | {
    f: "search" for f in LEGACY_SEARCH}
RUNNER_SOURCE = source(eval_runner)
CHILD_SOURCE = source(eval_child)


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


def lay_read_only(task: TaskSpec, folder: Path) -> None:
    """Overwrite the task's read-only files in ``folder`` with their pristine copies.

    By descriptor on both sides (:mod:`sandbox.fs`): whatever stands at a read-only
    name (a folder, a link) is removed, never followed, and a link on the way to one is
    refused, so the host (often root) cannot be steered into writing a host folder."""
    pristine, fs = WorkspaceFS(task.env_dir), WorkspaceFS(folder)
    for rel, st in pristine.walk().files:
        if task.is_read_only(rel):
            if fs.kind(rel) not in (None, "file"):
                fs.remove_tree(rel)
            fs.write(rel, pristine.chunks(rel), mode=scratch_mode(st.st_mode))


def _scratch(task: TaskSpec, source_dir: Path, dest: Path) -> Path:
    """The regular files of ``source_dir`` copied into ``dest`` with the read-only files laid
    back, both by descriptor (:func:`sandbox.fs.copy_tree`): a live workspace
    (Validate Submission) may hold symlinks (one to ``/task/scripts/answers`` must not become a
    submission), FIFOs or a very deep tree, and none of them may reach, block or crash scoring;
    and ``dest`` may be a sandbox's workspace between two commands (a timed task's repeats), so
    nothing there is followed either."""
    copy_tree(WorkspaceFS(source_dir), WorkspaceFS(dest))
    lay_read_only(task, dest)
    return dest


def split_function(task: TaskSpec, split: SplitName) -> str:
    """The data-only name of ``eval.py``'s function for ``split`` (the trusted phase of a
    two-phase task maps it, :data:`TRUSTED_FUNCTION`); a folder written before the splits
    scores ``search`` with its ``get_validation_score``."""
    if split == "search" and "search" not in task.splits:
        return LEGACY_SEARCH[0]
    return function_for(split, two_phase=False)


def evaluate(task: TaskSpec, workspace: Path, sandbox: str = "auto",
             function: str = "get_score", timeout: float | None = None,
             split: SplitName | None = None) -> EvalResult:
    """Score a scratch copy of ``workspace`` under the contract of ``environments/scoring/submission.py``.

    Nothing in ``workspace`` is trusted: read-only files are laid over it from the task's
    ``env/``; a task with ``scripts/produce.py`` runs it in a submission phase that has no
    result channel, and its pristine ``eval.py`` scores only the outputs, in a second sandbox,
    the value taken only from a line tagged with a nonce the submission never sees.
    ``split`` (``environments/task/splits.py``) picks the function and tells the submission
    phase which inputs to produce for; without it, ``function`` says (``test``'s by default).
    """
    if not task.has_eval:
        return EvalResult(failure="not_scored", detail=NO_EVAL, public_detail=NO_EVAL)
    if split is not None:
        function = split_function(task, split)
    timeout = timeout or task.limits.eval_timeout
    produce = has_produce(task.scripts_dir)
    with temporary_folder("labcoat-score-") as tmp:
        scratch = tmp / "workspace"
        try:
            if not (produce and task.timed):  # a timed task's repeats lay their own (_Repeated)
                _scratch(task, workspace, scratch)
        except (OSError, WorkspaceError) as err:
            return EvalResult(failure="infrastructure", detail=f"cannot copy the workspace: {err}")
        if not produce:  # data-only: the scorer never sees code
            strip_code(scratch, keep=task.is_read_only)
            return _unless_sentinel(task, _trusted(task, scratch, sandbox, function, timeout))
        try:
            return _two_phases(task, workspace, tmp, sandbox, function, timeout)
        except (SandboxError, OSError, ValueError) as err:
            return EvalResult(failure="infrastructure", detail=f"{type(err).__name__}: {err}")


def _unless_sentinel(task: TaskSpec, result: EvalResult) -> EvalResult:
    """``result``, or a failure where its value is MLAgentBench's failure value (its
    vectorization's ``1e10``: :func:`environments.task.mlagentbench.failure_value`)."""
    why = failure_value(task.mlagentbench, result.value) if result.value is not None else None
    if why is None:
        return result
    return result.model_copy(update={"value": None, "failure": "eval_error", "detail": why,
                                     "public_detail": why})


def _two_phases(task: TaskSpec, workspace: Path, tmp: Path, sandbox: str, function: str,
                timeout: float) -> EvalResult:
    """Phase (a) over ``tmp/workspace`` (the scratch copy), then phase (b) over its outputs."""
    challenge = secrets.token_hex(16)
    here = produce_dir(task.scripts_dir, tmp / "produce", challenge, SPLIT_OF.get(function, "test"))
    if task.timed:
        return _timed(task, workspace, tmp, here, challenge, sandbox, function, timeout)
    produced = _submission_phase(task, tmp, here, challenge, sandbox, timeout,
                                 SPLIT_OF.get(function, "test"))
    if isinstance(produced, EvalResult):
        return produced
    return score_outputs(task, produced, tmp / "workspace", tmp / "outputs", challenge, sandbox,
                         function, timeout)


def score_outputs(task: TaskSpec, produced: Produced, workspace: Path, dest: Path, challenge: str,
                  sandbox: str, function: str, timeout: float) -> EvalResult:
    """Phase (b) after a successful phase (a): its outputs copied out of ``workspace`` into
    ``dest`` (a new folder) and scored by the task's pristine ``eval.py``; the time is both
    phases', what the public sees is the submission's own output."""
    collect_outputs(workspace, dest, challenge)
    result = _trusted(task, dest, sandbox, TRUSTED_FUNCTION.get(function, function), timeout)
    return result.model_copy(update={
        "seconds": result.seconds + produced.seconds, "public_detail": produced.tail[-2000:]
        + (f"\n{result.failure}: scoring the outputs failed" if result.failure else "")})


def _submission_phase(task: TaskSpec, tmp: Path, here: Path, challenge: str, sandbox: str,
                      timeout: float, split: str = "test") -> Produced | EvalResult:
    """``produce.py`` over the scratch copy (next to the task's oracle for an interactive
    task); what it produced, or the failure it scores as."""
    limits, scratch = _limits(task, timeout), tmp / "workspace"
    if task.oracle is None:
        produced = run_produce(sandbox, scratch, here, limits, code_mounts())
    else:
        produced, seen = run_interactive(
            sandbox, scratch, here, limits, code_mounts(), task.scripts_dir, tmp / "oracle",
            challenge, task.oracle.max_requests, task.oracle.max_bytes, split)
        if (refused := _interaction_failure(produced, seen)) is not None:
            return refused
    return produced if produced.ok else produce_failure(produced, timeout)


def _interaction_failure(produced: Produced, seen: Interaction) -> EvalResult | None:
    """An oracle that failed (its text kept private) or a refused request (its reason public)."""
    if seen.oracle_failed:
        return EvalResult(failure="eval_error", seconds=produced.seconds, detail=seen.oracle_failed,
                          public_detail="the task's oracle failed")
    if seen.refused:
        detail = f"{seen.refused}\n{produced.tail}".strip()
        return EvalResult(failure="eval_error", seconds=produced.seconds, detail=detail,
                          public_detail=detail)
    return None


def open_submission(task: TaskSpec, folder: Path, here: Path, sandbox: str, timeout: float | None = None):
    """A sandbox for phase (a) over ``folder``, with the produce folder ``here`` (kept open
    across a run's steps by :mod:`environments.scoring.score_scratch`)."""
    return open_produce(sandbox, folder, here, _limits(task, timeout or task.limits.eval_timeout),
                        code_mounts())


def _limits(task: TaskSpec, timeout: float) -> SandboxLimits:
    return sandbox_limits(task).model_copy(update={"timeout": timeout})


def produce_failure(produced: Produced, timeout: float) -> EvalResult:
    if produced.timed_out:
        failure, why = "timeout", f"the submission ran past {timeout:g} s"
    elif produced.no_submission:
        failure, why = "no_submission", "the submission's file is missing"
    else:
        failure = "eval_error"
        why = "out of memory" if produced.oom else "the submission failed"
    detail = f"{why}:\n{produced.tail}".strip()
    return EvalResult(seconds=produced.seconds, failure=failure, detail=detail, public_detail=detail)


# --- timed tasks: the submission and the pristine env/, in interleaved pairs -----------------

class _Race(BaseModel):
    """A timed scoring's repeats so far: each side's wall times, and the pairs compared."""

    times: dict[str, list[float]] = Field(default_factory=lambda: {"a": [], "b": []})
    spent: float = 0.0
    paired: Paired | None = None


def _timed(task: TaskSpec, workspace: Path, tmp: Path, here: Path, challenge: str, sandbox: str,
           function: str, timeout: float) -> EvalResult:
    """A runtime: the submission and the pristine ``env/`` alternately, paired (``timing.py``);
    then every repeat's outputs checked by the trusted phase, which must agree on one value
    (the work done), and the value is that work per second."""
    race = _race(task, workspace, tmp, here, challenge, sandbox, timeout)
    if isinstance(race, EvalResult):
        return race
    checked = _trusted(task, tmp / "outputs", sandbox, TRUSTED_FUNCTION.get(function, function),
                       timeout, each=True)
    if checked.value is None:
        return checked.model_copy(update={"seconds": checked.seconds + race.spent})
    work, paired = checked.value, race.paired
    ga, gb = timing.geometric_mean(race.times["a"]), timing.geometric_mean(race.times["b"])
    value, base = (work / ga, work / gb) if task.higher_is_better else (ga / work, gb / work)
    detail = (f"{len(race.times['a'])} interleaved pairs: submission {ga:.4g} s, pristine env/ "
              f"{gb:.4g} s (geometric means); improvement {paired.improvement:+.1%}, 95% t-interval "
              f"[{paired.improvement_low:+.1%}, {paired.improvement_high:+.1%}]")
    return EvalResult(value=value, baseline=base, paired=paired, seconds=race.spent + checked.seconds,
                      detail=detail, public_detail=detail)


def _race(task: TaskSpec, workspace: Path, tmp: Path, here: Path, challenge: str, sandbox: str,
          timeout: float) -> _Race | EvalResult:
    """Pairs until the interval settles (or half the time is spent, at least ``MIN_PAIRS``).

    Each side keeps one sandbox (a command costs milliseconds, a new namespace more); every
    repeat gets a new challenge, so nothing cached by an earlier repeat answers a later one;
    the order within a pair alternates (A B, B A, ...) so that going first or second (a warm
    page cache, a CPU frequency step) does not bias the ratio. The submission's outputs of
    repeat ``i`` are kept as ``tmp/outputs/rep<i>``.
    """
    limits, mounts, race = _limits(task, timeout), code_mounts(), _Race()
    kept = _Repeated(task, workspace, tmp / "a")
    spaces = {"a": tmp / "a", "b": _scratch(task, task.env_dir, tmp / "b")}
    deadline = time.monotonic() + timeout / 2
    with (open_produce(sandbox, spaces["a"], here, limits, mounts) as sa,
          open_produce(sandbox, spaces["b"], here, limits, mounts) as sbx):
        kept.opened(sa)
        boxes = {"a": sa, "b": sbx}
        for i in range(timing.MAX_PAIRS):
            rep = f"{challenge}{i:04x}"
            WorkspaceFS(here).write(CHALLENGE, rep.encode(), mode=0o644)
            for side in (("a", "b") if i % 2 == 0 else ("b", "a")):  # ABBA: no order bias
                produced = run_produce(sandbox, spaces[side], here, limits, mounts, sb=boxes[side])
                race.spent += produced.seconds
                if not produced.ok:
                    return _side_failure(side, produced, race.spent, timeout)
                race.times[side].append(produced.seconds)
                if side == "a":
                    collect_outputs(spaces["a"], tmp / "outputs" / f"rep{i:02d}", rep)
                    kept.reset()
            race.paired = timing.compare_times(race.times["a"], race.times["b"], task.higher_is_better)
            if timing.settled(race.paired, task.success_threshold) or (
                    i + 1 >= timing.MIN_PAIRS and time.monotonic() > deadline):
                break
    return race


class _Repeated:
    """The submission's workspace across a timed scoring's repeats: laid once, then between
    repeats laid again only where the last repeat touched it, every folder's mode, times and
    notes put back (:mod:`environments.scoring.scratch_sync`), so the task's read-only data is
    not copied per repeat; a workspace the plan cannot describe is emptied and copied each
    time (:func:`reset_workspace`). Either way the next repeat finds what the first found, in
    a renewed sandbox (``Sandbox.renew``: new ``/tmp`` and ``/dev/shm`` mounts, never emptied
    ones, which a folder made unwritable survives)."""

    def __init__(self, task: TaskSpec, source_dir: Path, space: Path) -> None:
        self.task, self.source_dir, self.sb = task, source_dir, None
        self.want = plan(task, source_dir, read_only_files(task), strip=False)
        self.sources = {"run": WorkspaceFS(source_dir), "env": WorkspaceFS(task.env_dir)}
        self.scratch = Scratch(space)
        if self.want is None:
            _scratch(task, source_dir, space)
        else:
            self.scratch.fs.make_root()
            self.scratch.sync(self.want, self.sources)

    def opened(self, sb) -> None:
        """The sandbox over the workspace is open: a first, trusted command (which hands the
        workspace over), then the keys of what was laid are taken, before the submission runs."""
        self.sb = sb
        sb.exec(["true"])
        if self.want is not None:
            self.scratch.refresh()
            self.scratch.settle()

    def reset(self) -> None:
        """Between two repeats (the sandbox holds no process): the sandbox renewed, the
        workspace as submitted again."""
        if self.want is None:
            reset_workspace(self.task, self.source_dir, self.scratch.folder, self.sb)
            return
        self.sb.renew()
        self.scratch.sync(self.want, self.sources)
        self.scratch.settle()


def _side_failure(side: str, produced: Produced, spent: float, timeout: float) -> EvalResult:
    """The submission failing is its score; the pristine ``env/`` failing is ours."""
    if side == "b":
        why = "ran past the time limit" if produced.timed_out else error_summary(produced.tail)
        return EvalResult(failure="infrastructure", seconds=spent,
                          detail=f"the unmodified task (the pristine env/) failed, so there is "
                          f"nothing to time the submission against: {why}")
    return produce_failure(produced, timeout)


def error_summary(text: str, limit: int = 300) -> str:
    """A failure's output in one line: its first line (what failed) and its last (a Python
    traceback's exception), not the traceback between (shown to a person who ran a command)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no output"
    head, last = lines[0].rstrip(":"), lines[-1]
    if len(lines) == 1 or head.startswith("Traceback"):  # nothing said before the traceback
        summary = last
    else:
        summary = f"{head}: {last}"
    return summary if len(summary) <= limit else summary[: limit - 1] + "…"


def reset_workspace(task: TaskSpec, source_dir: Path, space: Path, sb) -> None:
    """Between repeats: the submission's workspace as submitted again, the sandbox renewed
    (new temporary folders: ``Sandbox.renew``), so a repeat cannot answer from what an
    earlier one left behind (untimed).

    ``space`` is the open sandbox's workspace: it is emptied and laid again by descriptor
    only, and only between two commands (when the sandbox holds no process)."""
    sb.renew()
    WorkspaceFS(space).clear()
    _scratch(task, source_dir, space)


# --- the trusted phase -------------------------------------------------------------------

def trusted_mounts(task: TaskSpec) -> list[Mount]:
    """What the trusted phase's sandbox mounts: labcoat's code, the task's ``scripts/`` and its
    pristine ``env/``, all read-only."""
    return [*code_mounts(), Mount(source=task.scripts_dir, target=TASK_SCRIPTS, read_only=True),
            Mount(source=task.env_dir, target=TASK_ENV, read_only=True)]


def open_trusted(task: TaskSpec, folder: Path, sandbox: str, timeout: float | None = None):
    """A sandbox for the trusted phase over ``folder`` (kept open across a run's steps by
    :mod:`environments.scoring.score_scratch`)."""
    return open_sandbox(sandbox, folder, _limits(task, timeout or task.limits.eval_timeout),
                        trusted_mounts(task))


def _trusted(task: TaskSpec, folder: Path, sandbox: str, function: str, timeout: float,
             each: bool = False) -> EvalResult:
    """Phase (b): the task's pristine ``eval.py`` over ``folder`` (outputs, or data-only files)."""
    try:
        with open_trusted(task, folder, sandbox, timeout) as sb:
            return run_trusted(sb, function, timeout, each)
    except (SandboxError, OSError, ValueError) as err:
        return EvalResult(failure="infrastructure", detail=f"{type(err).__name__}: {err}")


def run_trusted(sb, function: str, timeout: float, each: bool = False) -> EvalResult:
    """The trusted runner's one command in ``sb`` (:func:`open_trusted`'s), its report read
    from the line tagged with a nonce made for this command alone. Raises the sandbox's
    errors (the caller decides what a lost sandbox means)."""
    nonce = secrets.token_hex(16)
    result = sb.exec(
        [sb.python, "-I", "-c", RUNNER_SOURCE, sb.path_for(TASK_SCRIPTS), sb.workdir,
         function, CHILD_SOURCE, "1" if each else "0"],
        stdin=nonce + "\n",
    )
    if result.timed_out:
        return EvalResult(seconds=result.seconds, failure="timeout",
                          detail=f"eval.py ran past {timeout:g} s")
    found = re.findall(rf"^{eval_runner.RESULT_TAG} {nonce} (.+)$", result.stdout, re.MULTILINE)
    tail = (result.stderr or result.stdout)[-2000:]
    if not found:
        return _no_result_line(result, tail)
    try:  # the runner's line; what the evaluated code wrote shaped it (a report nested deep)
        report = loads_json(found[-1], max_bytes=1 << 20, max_depth=32, what="the scoring report")
    except LimitError as err:
        return EvalResult(seconds=result.seconds, failure="eval_error", detail=f"{err}\n{tail}")
    return _from_report(report, result, function, tail)


def _no_result_line(result, tail: str) -> EvalResult:
    """The trusted runner always prints its line unless it could not start (infrastructure) or
    something killed it: the memory cap, or the evaluated code (an eval error)."""
    if result.exit_code in (126, 127) and not result.oom_killed:
        return EvalResult(seconds=result.seconds, failure="infrastructure",
                          detail=f"the scoring interpreter did not start (exit {result.exit_code}): {tail}")
    why = "out of memory" if result.oom_killed else (
        f"the scoring process died (exit {result.exit_code}) before reporting")
    return EvalResult(seconds=result.seconds, failure="eval_error", detail=f"{why}: {tail}")


def _from_report(report: dict, result, function: str, tail: str) -> EvalResult:
    """The runner's report (:mod:`environments.in_sandbox.eval_child`'s, plus its exit code)."""
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
