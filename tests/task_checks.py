"""Reusable steps for the task tests: prepare a task, solve a workspace, score it.

The classic task tests (``tests/environments/test_tasks_<name>.py``) and the method tests' task
checks (``tests/methods/test_<method>.py``) walk the path of ``labcoat check-task`` with
labcoat's own machinery: ``environments.task.prepare.prepare_task`` (a private, prepared copy of the
task folder), ``env/`` (optionally with ``reference/`` laid over it) copied to a workspace, the
task's ``solve`` scripts run there by ``environments.scoring.baselines.run_solve``, and the workspace
scored by ``environments.scoring.evaluate.evaluate`` (pristine ``scripts/eval.py``, read-only files laid
over, in the local sandbox).

``python -m tests.task_checks <task> [--runs 3] [--reference]`` measures a task the same way and
prints mean ± std (how the baselines in ``task.toml`` were measured).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from environments.scoring.baselines import improvement, run_solve
from environments.scoring.evaluate import EvalResult, evaluate
from environments.scoring.score import make_score
from environments.task.anchors import load_anchors, normalize
from environments.task.home import labcoat_home
from environments.task.prepare import prepare_task
from environments.task.spec import TaskSpec, load_task
from environments.task.splits import function_for
from environments.task.suite import TASKS_DIR

SANDBOX = "local"

__all__ = ["TASKS_DIR", "load_task"]


def task_spec(name: str) -> TaskSpec:
    """The pristine suite task ``name``."""
    return load_task(TASKS_DIR / name)


def prepared_task(name: str, cache: Path | None = None) -> TaskSpec:
    """Suite task ``name`` prepared in a private copy under ``cache``; by default in
    ``$LABCOAT_HOME/tasks``, which the tests share for the session (``tests/conftest.py``), as
    runs do: preparing is deterministic (``assert_deterministic``), so one copy serves all."""
    return prepare_task(task_spec(name), cache=Path(cache) if cache else None, sandbox=SANDBOX)


def private_files(spec: TaskSpec) -> list[Path]:
    """Files that ``prepare.py`` wrote next to itself (the task's private data), less the
    byte-identical copies of public ``env/`` files kept there for the trusted scoring phase
    (whatever their names: bfn-fast-sampling keeps the public dev oracle as ``private/gmm.npz``;
    its secret is a transform that eval.py draws, not that file)."""
    pristine = TASKS_DIR / spec.name / "scripts"
    public = {hashlib.sha256(p.read_bytes()).digest() for p in spec.env_dir.rglob("*") if p.is_file()}
    found = []
    for path in sorted(spec.scripts_dir.rglob("*")):
        rel = path.relative_to(spec.scripts_dir)
        if not path.is_file() or "__pycache__" in rel.parts or (pristine / rel).exists():
            continue
        if hashlib.sha256(path.read_bytes()).digest() in public:
            continue
        found.append(path)
    return found


def make_workspace(spec: TaskSpec, dest: Path, reference: bool = False) -> Path:
    """Copy the prepared ``env/`` to ``dest``; with ``reference``, lay ``reference/`` over it."""
    dest = Path(dest)
    shutil.copytree(spec.env_dir, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if reference:
        assert spec.reference_dir.is_dir(), f"{spec.name}: no reference/ folder"
        shutil.copytree(spec.reference_dir, dest, dirs_exist_ok=True)
    return dest


def solve(spec: TaskSpec, workspace: Path) -> None:
    """Run the task's ``solve`` scripts in ``workspace`` (in the sandbox)."""
    run_solve(spec, Path(workspace), sandbox=SANDBOX)


def score(spec: TaskSpec, workspace: Path) -> EvalResult:
    """Score ``workspace`` with the task's pristine ``eval.py`` in the sandbox."""
    return evaluate(spec, Path(workspace), sandbox=SANDBOX)


def value(spec: TaskSpec, workspace: Path) -> float:
    """The score of ``workspace``; fails the test with eval's reason when there is none."""
    result = score(spec, workspace)
    assert result.value is not None, f"{spec.name}: eval failed ({result.failure}): {result.detail}"
    return result.value


def solve_and_score(spec: TaskSpec, workspace: Path, reference: bool = False) -> float:
    """Workspace from ``env/`` (+ ``reference/``), run the solve scripts, return the score."""
    ws = make_workspace(spec, workspace, reference=reference)
    solve(spec, ws)
    return value(spec, ws)


def gain(spec: TaskSpec, new: float, baseline: float) -> float:
    """Relative improvement of ``new`` over ``baseline`` in the metric's direction."""
    return improvement(new, baseline, spec.higher_is_better)


def assert_no_private_data_in(spec: TaskSpec, workspace: Path) -> None:
    """No private file of the task, by name or by content, is anywhere in ``workspace``."""
    secrets = {p.name: p.read_bytes() for p in private_files(spec)}
    assert secrets, f"{spec.name}: prepare.py wrote no private data next to itself"
    for path in Path(workspace).rglob("*"):
        if not path.is_file():
            continue
        assert path.name not in secrets, f"private file {path.name} is in the workspace"
        data = path.read_bytes()
        for secret_name, secret in secrets.items():
            assert data != secret, f"{path} is a copy of the private {secret_name}"


def assert_timed_reference_succeeds(spec: TaskSpec, tmp_path: Path) -> tuple[float, float]:
    """A timed task: the reference scored against the pristine env/ in the same call
    (interleaved pairs, ``environments/scoring/timing.py``); the whole 95% interval of its improvement
    must lie past the threshold. Returns (the pristine env/'s value, the reference's).

    A scoring stops at ``timing.MAX_PAIRS`` pairs, and on a processor where the reference is
    only ~30% faster (llama-inference on an AVX-512/AMX machine: +29.4%, interval [+9.3%,
    +53.3%], once in three runs alone) five pairs can leave the interval's low end just short
    of the threshold. So an unconvincing scoring is measured once more, and the check fails
    only when neither is convincing (both details in the message)."""
    ws = make_workspace(spec, Path(tmp_path) / "reference", reference=True)
    solve(spec, ws)
    details = []
    for _ in range(2):
        result = score(spec, ws)
        scored = make_score(spec, result, None)
        details.append(result.detail)
        if scored.success and scored.interval[0] > spec.success_threshold:
            break
    else:
        raise AssertionError(f"{spec.name}: the reference is not faster beyond the noise, twice: "
                             + " | ".join(details))
    if load_anchors(spec.root) is not None:  # a log-ratio anchor moves with the machine more
        assert 0.4 < scored.normalized < 2.0, (spec.name, scored.normalized, result.detail)
    return scored.baseline, scored.value


ANCHOR_TOLERANCE = 0.15  # machines differ a little even on deterministic tasks (BLAS, threads)

TOLERANCE: dict[str, dict[str, float]] = {
    # How far a measured baseline may be from task.toml's on another machine, where three
    # ``baseline_std`` (0 for a deterministic eval) is too tight: BLAS, torch's CPU kernels and
    # thread counts differ by processor, or task.toml rounds the value. Each entry is
    # deterministic on one machine; the values quoted were measured with the same library
    # versions on two of this project's 2-core machines (an AVX2 one and an AVX-512/AMX one).
    "dataset-distillation": {"abs": 0.015},  # version 1 (all 597 images): 0.7437 and 0.7320
    "label-free-accuracy": {"abs": 0.6},  # 15.35 and 15.6437 on all 797 images; 17.3832 on
    # test's 399 (AVX-512/AMX; half the images: wider than 0.4, the other machine not measured)
    "ln-net-capacity": {"abs": 0.01},  # 0.767188 (task.toml) and 0.772656
    "local-learning": {"abs": 0.4},  # 9.1975 and 9.5679 on all 540 images; 8.5185 on test's 180
    "offline-irl": {"abs": 1e-5},
    "online-lp": {"rel": 1e-3},
    "q-bias": {"abs": 1e-4},  # task.toml has 4 decimals
    "spurious-features": {"abs": 1e-3},
    "federated-partition": {"rel": 1e-3},
    "parkinsons": {"abs": 1e-3},  # task.toml rounds to 3 decimals
    "spaceship-titanic": {"abs": 1e-4},  # task.toml rounds to 4 decimals
    "lora-routing": {"abs": 1e-3},  # task.toml rounds to 3 decimals
    "sparse-compression": {"abs": 1e-5},
    "structured-bbvi": {"rel": 1e-6},
    "bfn-fast-sampling": {"abs": 1e-3},  # task.toml rounds to 3 decimals
    "sparse-robustness": {"abs": 1e-4},  # task.toml has 6 decimals (4 of 300 images)
}


def assert_anchored(spec: TaskSpec, base: float, ref: float) -> None:
    """The normalized score (``environments/task/anchors.py``) puts the baseline at 0 and the
    reference at 1, up to ``ANCHOR_TOLERANCE``; every suite task has its anchors. A noisy
    task's baseline (``baseline_std``, one training seed measured) may sit anywhere within
    three of its standard deviations of the anchor: poglm-hidden-neurons' seed 0 scores 44.57
    on one processor and 50.47 on another, inside its seeds' spread (std 5.6)."""
    anchors = load_anchors(spec.root)
    assert anchors is not None, f"{spec.name}: no anchors.toml"
    span = abs((anchors.reference or 0.0) - (anchors.baseline or 0.0)) or 1.0
    noise = 3 * (spec.baseline_std or 0.0) / span
    assert normalize(anchors, base) == pytest.approx(0.0, abs=max(ANCHOR_TOLERANCE, noise)), (
        spec.name, base)
    assert normalize(anchors, ref) == pytest.approx(1.0, abs=ANCHOR_TOLERANCE), (spec.name, ref)


def assert_reference_beats_baseline(spec: TaskSpec, tmp_path: Path) -> tuple[float, float]:
    """Baseline (``env/``) and reference (``env/`` + ``reference/``) solved and scored;
    the reference must beat the baseline by more than the success threshold."""
    if spec.timed:
        return assert_timed_reference_succeeds(spec, tmp_path)
    base = solve_and_score(spec, Path(tmp_path) / "baseline")
    ref = solve_and_score(spec, Path(tmp_path) / "reference", reference=True)
    assert_anchored(spec, base, ref)
    g = gain(spec, ref, base)
    assert g > spec.success_threshold, (
        f"{spec.name}: reference {ref:.4g} vs baseline {base:.4g} is a {g:+.1%} improvement, "
        f"not more than the threshold {spec.success_threshold:.0%}"
    )
    return base, ref


def checked(name: str) -> tuple[TaskSpec, float, float]:
    """:func:`assert_reference_beats_baseline` on suite task ``name`` as the session prepared
    it, measured once per test session: the suite's ``test_check_task`` and a method's own task
    test ask for the same measurement (minutes of CPU on some tasks), so the first to ask
    measures it, under a lock, and the other reads the result (``$LABCOAT_HOME/checked``,
    keyed by the prepared copy's content hash). A timed task is measured anew each time: its
    result is a measurement of this moment's machine. Returns the task, the baseline's score
    and the reference's."""
    spec = prepared_task(name)
    if spec.timed:
        with tempfile.TemporaryDirectory() as tmp:
            return (spec, *assert_reference_beats_baseline(spec, Path(tmp)))
    store = labcoat_home() / "checked"
    store.mkdir(parents=True, exist_ok=True)
    path = store / f"{spec.root.name}.json"
    with open(store / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            known = json.loads(path.read_text())
            return spec, known["baseline"], known["reference"]
        with tempfile.TemporaryDirectory() as tmp:
            base, ref = assert_reference_beats_baseline(spec, Path(tmp))
        path.write_text(json.dumps({"baseline": base, "reference": ref}))
    return spec, base, ref


def assert_baseline_as_recorded(spec: TaskSpec, measured: float, *, abs: float | None = None,
                                 rel: float | None = None) -> None:
    """The measured baseline matches ``task.toml``'s ``baseline``: within ``abs`` or ``rel`` when
    given, else within the task's entry in :data:`TOLERANCE`, else within three times its
    ``baseline_std`` (a deterministic task: ``1e-9``)."""
    assert spec.baseline is not None, f"{spec.name}: task.toml records no baseline"
    if abs is None and rel is None:
        known = TOLERANCE.get(spec.name, {})
        abs, rel = known.get("abs"), known.get("rel")
    if abs is None and rel is None:
        abs = 3 * (spec.baseline_std or 0.0) + 1e-9
    assert measured == pytest.approx(spec.baseline, abs=abs, rel=rel), (
        f"{spec.name}: measured baseline {measured:.6g}, task.toml says {spec.baseline:.6g}"
    )


def assert_check_task(name: str) -> tuple[TaskSpec, float, float]:
    """What ``labcoat check-task`` checks (:func:`checked`), and the measured baseline as
    ``task.toml`` records it (:func:`assert_baseline_as_recorded`). Returns the prepared task,
    the baseline's score and the reference's."""
    spec, base, ref = checked(name)
    if not spec.timed:
        assert_baseline_as_recorded(spec, base)
    return spec, base, ref


def load_module(path: Path, name: str) -> ModuleType:
    """Import the Python file ``path`` as a module called ``name`` (a task's eval.py, a script)."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def load_eval(spec: TaskSpec) -> ModuleType:
    """The task's ``scripts/eval.py`` imported in this process (for its helpers and gates)."""
    return load_module(spec.eval_path, f"eval_{spec.name.replace('-', '_')}")


def produce_and_score(spec: TaskSpec, workspace: Path, out: Path,
                      patch: dict[str, dict[str, object]] | None = None, split: str = "test") -> float:
    """Both phases of a two-phase task in this process, for quick unit tests of a task's logic
    (the scorer itself runs them in two sandboxes): ``produce.py`` on ``workspace`` into
    ``out``, then ``eval.py``'s ``score``. ``patch`` sets module attributes first, e.g.
    ``{"produce": {"STEPS": 3000}, "eval": {"RUNS": 4}}``. Another ``split`` than test: produce
    reads a ``split.txt`` beside ``inputs/`` (as the host writes it) and that split's function
    scores."""
    import sys

    # what the produce runner puts first on its path (environments/in_sandbox/produce_runner.py)
    paths = [str(spec.scripts_dir), str(spec.scripts_dir / "inputs")]
    sys.path[:0] = paths
    try:
        mods = {"produce": load_module(spec.scripts_dir / "produce.py", f"produce_{spec.name}"),
                "eval": load_eval(spec)}
    finally:
        for entry in paths:
            sys.path.remove(entry)
    for which, attrs in (patch or {}).items():
        for name, value in attrs.items():
            setattr(mods[which], name, value)
    out = Path(out)
    out.mkdir(parents=True)
    here = spec.scripts_dir
    if split != "test":
        here = out.with_name(f"{out.name}-here")
        here.mkdir()
        if (spec.scripts_dir / "inputs").is_dir():
            (here / "inputs").symlink_to(spec.scripts_dir / "inputs")
        (here / "split.txt").write_text(split)
    mods["produce"].produce(Path(workspace), here, out)
    return float(getattr(mods["eval"], function_for(split, two_phase=True))(str(out)))


def assert_deterministic(spec: TaskSpec, cache: Path) -> None:
    """Preparing the task again gives byte-identical data, public and private."""
    again = prepared_task(spec.name, cache)
    files = [p.relative_to(spec.root) for p in spec.root.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.name != ".prepared"]
    assert files
    for rel in files:
        assert (again.root / rel).read_bytes() == (spec.root / rel).read_bytes(), rel


def measure(name: str, runs: int = 3, reference: bool = False) -> list[float]:
    """Score ``runs`` fresh workspaces of a freshly prepared task."""
    scores = []
    with tempfile.TemporaryDirectory() as tmp:
        spec = prepared_task(name, Path(tmp) / "cache")
        for i in range(runs):
            scores.append(solve_and_score(spec, Path(tmp) / f"ws{i}", reference=reference))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", action="store_true")
    args = parser.parse_args()
    scores = measure(args.task, args.runs, args.reference)
    std = statistics.stdev(scores) if len(scores) > 1 else 0.0
    print(f"{args.task}{' (reference)' if args.reference else ''}: scores {scores}")
    print(f"mean {statistics.mean(scores):.6g} ± {std:.2g} over {len(scores)} runs")


if __name__ == "__main__":
    main()
