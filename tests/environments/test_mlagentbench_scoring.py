"""MLAgentBench-shaped folders (tests/mlab_folders.py) score like MLAgentBench: ``eval.py`` sees
the pristine ``env/`` where it looks for it (read-only), a starter that cannot run is scored
against MLAgentBench's fixed baseline (and the score says so), a task without ``eval.py`` is
"not scored", and none of it prints a traceback on the command line."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.scoring.baselines import (
    BaselineError,
    ensure_baseline,
    find_baseline,
    run_solve,
)
from environments.scoring.evaluate import evaluate
from environments.scoring.score import make_score
from environments.task.mlagentbench import NO_EVAL
from environments.task.spec import load_task
from tests import mlab_folders as mlab
from tests.conftest import write_task
from tests.sandbox.backends import LOCAL_AND_SLOW_DOCKER, docker_marks

BACKENDS = pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=docker_marks)])


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _submission(task: str, root: Path, ws: Path, perfect: bool = False) -> None:
    """A submission.csv in ``ws`` made from the answers (off by a little unless ``perfect``)."""
    rows = _rows(root / "scripts" / "answer.csv")
    for i, r in enumerate(rows):
        if perfect:
            continue
        if task == "house-price":
            r["SalePrice"] = str(int(r["SalePrice"]) * 1.1)
        elif task == "spaceship-titanic" and i % 4 == 0:
            r["Transported"] = str(r["Transported"] != "True")
        elif task.startswith("amp"):
            r["rating"] = str(float(r["rating"]) + 1 + i % 3)
    _write_rows(ws / "submission.csv", rows)


def _direct(root: Path, ws: Path) -> float:
    """MLAgentBench's way: import the task's eval.py and call get_score on the folder."""
    code = (f"import sys; sys.path.insert(0, {str(root / 'scripts')!r}); import eval; "
            f"print(repr(float(eval.get_score({str(ws)!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("task", ["house-price", "spaceship-titanic",
                                  "amp-parkinsons-disease-progression-prediction"])
def test_scores_equal_eval_py_called_directly(tmp_path, task):
    build = {"house-price": mlab.make_house_price, "spaceship-titanic": mlab.make_spaceship_titanic}
    root = build.get(task, mlab.make_amp_parkinsons)(tmp_path / "copy")
    spec = load_task(root)
    ws = tmp_path / "ws"
    shutil.copytree(spec.env_dir, ws)
    _submission(task, root, ws)
    result = evaluate(spec, ws, "local")
    assert result.value is not None, result.detail
    assert result.value == pytest.approx(_direct(root, ws), rel=1e-12)


@pytest.mark.parametrize("sandbox", LOCAL_AND_SLOW_DOCKER)
def test_eval_imports_the_pristine_env_never_the_workspace(tmp_path, sandbox):
    """amp-parkinsons' eval.py does ``from train import smapep1`` from ``../env``: the task's
    pristine train.py, not a workspace's train.py that makes every submission perfect."""
    root = mlab.make_amp_parkinsons(tmp_path / "amp")
    spec = load_task(root)
    ws = tmp_path / "ws"
    shutil.copytree(spec.env_dir, ws)
    _submission(spec.name, root, ws)
    (ws / "train.py").write_text("def smapep1(y_true, y_pred):\n    return 0.0\n")
    (ws / "pkg").mkdir()
    (ws / "pkg" / "train.py").write_text("def smapep1(y_true, y_pred):\n    return 0.0\n")
    result = evaluate(spec, ws, sandbox)
    assert result.value is not None and result.value > 1.0, result.detail
    assert result.value == pytest.approx(_direct(root, ws))


ENV_WRITER = textwrap.dedent("""
    import os
    def get_score(folder):
        env = os.path.join(os.path.dirname(__file__), "..", "env")
        assert os.path.isfile(os.path.join(env, "data.txt")), "the pristine env/ is not visible"
        try:
            with open(os.path.join(env, "data.txt"), "a") as fh:
                fh.write("tampered")
            return 1.0
        except OSError:
            return 0.0
""")


@BACKENDS
def test_the_env_seen_by_the_scorer_is_read_only(tmp_path, sandbox):
    """The task's env/ is mounted for eval.py, read-only: nothing run while scoring (eval.py and
    what it imports) can change the pristine files later runs start from."""
    spec = load_task(write_task(tmp_path / "t", eval_body=ENV_WRITER))
    ws = tmp_path / "ws"
    shutil.copytree(spec.env_dir, ws)
    result = evaluate(spec, ws, sandbox)
    assert result.value == 0.0, result.detail
    assert (spec.env_dir / "data.txt").read_text() == "1 2 3\n"


@pytest.mark.slow  # scores three workspaces of a real folder (~11 s)
def test_a_broken_starter_scores_against_mlagentbench_fixed_baseline(tmp_path):
    root = mlab.make_house_price(tmp_path / "hp-copy")
    spec = load_task(root)
    assert ensure_baseline(spec, runs=1, sandbox="local") == 1e10
    used = find_baseline(spec, "local")
    assert used.source == "MLAgentBench" and "train_mae" in used.why and "plot.py" in used.why
    assert "Traceback" not in used.why

    noop = tmp_path / "noop"  # the starter as given: it makes no submission
    shutil.copytree(spec.env_dir, noop)
    with pytest.raises(RuntimeError):
        run_solve(spec, noop, "local")
    s = make_score(spec, evaluate(spec, noop, "local"), None, "local")
    assert s.failure == "no_submission" and not s.success

    fixed = tmp_path / "fixed"  # the starter completed: a model and its predictions
    shutil.copytree(spec.env_dir, fixed)
    (fixed / "train.py").write_text(mlab.FIXED_STARTER["house-price"])
    run_solve(spec, fixed, "local")
    s = make_score(spec, evaluate(spec, fixed, "local"), None, "local")
    assert s.value is not None and s.value < 1e5 and s.success, s.detail
    assert s.baseline == 1e10 and s.baseline_source == "MLAgentBench" and "train_mae" in s.baseline_why


def test_the_fallback_needs_the_task_recognised_by_content(tmp_path):
    """A spaceship-titanic copy falls back to 0.5; the same starter in a folder that is not
    MLAgentBench's gets a brief error (no fixed baseline is known), not a guess."""
    spec = load_task(mlab.make_spaceship_titanic(tmp_path / "st"))
    assert ensure_baseline(spec, runs=1, sandbox="local") == 0.5
    assert "train_accuracy" in find_baseline(spec, "local").why

    other = mlab.make_spaceship_titanic(tmp_path / "mine")
    (other / "scripts" / "research_problem.txt").write_text("Predict who was transported.\n")
    spec = load_task(other)
    assert spec.mlagentbench is None
    with pytest.raises(BaselineError) as info:
        ensure_baseline(spec, runs=1, sandbox="local")
    assert "train_accuracy" in str(info.value) and "Traceback" not in str(info.value)


@pytest.mark.slow
def test_amp_parkinsons_improvement_is_a_success_and_a_no_op_is_not(tmp_path):
    root = mlab.make_amp_parkinsons(tmp_path / "amp")
    spec = load_task(root)
    base = ensure_baseline(spec, runs=1, sandbox="local")
    assert find_baseline(spec, "local").source == "stored" and base > 1.0
    noop = tmp_path / "noop"
    shutil.copytree(spec.env_dir, noop)
    run_solve(spec, noop, "local")
    s = make_score(spec, evaluate(spec, noop, "local"), None, "local")
    assert s.value == pytest.approx(base) and not s.success
    _submission(spec.name, root, noop, perfect=True)
    s = make_score(spec, evaluate(spec, noop, "local"), None, "local")
    assert s.value == 0.0 and s.success and s.improvement == pytest.approx(1.0)


def test_a_task_without_eval_py_is_not_scored(tmp_path):
    root = tmp_path / "llama"
    (root / "env").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "env" / "inference.py").write_text("print('1.0 tokens/s')\n")
    (root / "scripts" / "research_problem.txt").write_text(
        "Speed up inference.py with the accelerate library.")
    spec = load_task(root)
    assert ensure_baseline(spec, sandbox="local") is None
    result = evaluate(spec, spec.env_dir, "local")
    assert result.failure == "not_scored" and result.detail == NO_EVAL
    runner, app = CliRunner(), _app()
    base = runner.invoke(app, ["baseline", str(root), "--sandbox", "local"])
    assert base.exit_code == 1 and "no eval.py" in base.output, base.output
    actions = _replay(tmp_path, [{"action": "List Files", "args": {"dir_path": "."}},
                                 {"action": "Final Answer", "args": {"final_answer": "done"}}])
    run = runner.invoke(app, ["run", str(root), "--actions", str(actions), "--sandbox", "local",
                              "--runs-dir", str(tmp_path / "runs")])
    assert run.exit_code == 0 and NO_EVAL in " ".join(run.output.split()), run.output
    for out in (base, run):
        assert "Traceback" not in out.output and isinstance(out.exception, (SystemExit, type(None)))


def _app():
    from tui.cli import app

    return app


def _replay(tmp_path: Path, actions: list[dict]) -> Path:
    path = tmp_path / "actions.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return path


@pytest.mark.slow  # four CLI processes on a real folder (~10 s)
def test_cli_run_score_baseline_check_task_print_no_traceback(tmp_path):
    """The house-price copy through the CLI: the starter cannot run, so the score is against
    MLAgentBench's fixed baseline, and says so; no command prints a traceback."""
    root = mlab.make_house_price(tmp_path / "hp-copy")
    runner, app = CliRunner(), _app()
    base = runner.invoke(app, ["baseline", str(root), "--runs", "1", "--sandbox", "local"])
    assert base.exit_code == 0 and "MLAgentBench" in base.output and "train_mae" in base.output, base.output
    check = runner.invoke(app, ["check-task", str(root), "--sandbox", "local"])
    assert check.exit_code == 1 and "reference/" in check.output
    actions = _replay(tmp_path, [
        {"action": "Write File", "args": {"file_name": "train.py",
                                          "content": mlab.FIXED_STARTER["house-price"]}},
        {"action": "Execute Script", "args": {"script_name": "train.py"}},
        {"action": "Final Answer", "args": {"final_answer": "done"}}])
    run = runner.invoke(app, ["run", str(root), "--actions", str(actions), "--sandbox", "local",
                              "--runs-dir", str(tmp_path / "runs")])
    assert run.exit_code == 0 and "success" in run.output, run.output
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    score = runner.invoke(app, ["score", str(run_dir), "--sandbox", "local"])
    said = " ".join(score.output.split())
    assert score.exit_code == 0 and "baseline: MLAgentBench" in said and "plot.py" in said, score.output
    recorded = json.loads((run_dir / "score.json").read_text())
    assert recorded["baseline_source"] == "MLAgentBench" and "train_mae" in recorded["baseline_why"]
    for out in (base, check, run, score):
        assert "Traceback" not in out.output and (out.exception is None or isinstance(out.exception, SystemExit))


CRASHING = "import numpy\nnumpy.this_was_removed_in_numpy_2()\n"


def test_a_timed_task_whose_pristine_env_crashes_scores_with_a_clear_error(tmp_path):
    """``labcoat score`` of a timed task whose unmodified env/ crashes (MLAgentBench's
    vectorization under a numpy that breaks it): one clear line, no traceback."""
    from tests.environments.test_seam import FAST, timed_task

    root = timed_task(tmp_path)
    (root / "env" / "fast.py").write_text(CRASHING)
    actions = _replay(tmp_path, [
        {"action": "Write File", "args": {"file_name": "fast.py", "content": FAST}},
        {"action": "Final Answer", "args": {"final_answer": "done"}}])
    runner, app = CliRunner(), _app()
    run = runner.invoke(app, ["run", str(root), "--actions", str(actions), "--sandbox", "local",
                              "--runs-dir", str(tmp_path / "runs"), "--no-score"])
    assert run.exit_code == 0, run.output
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    score = runner.invoke(app, ["score", str(run_dir), "--sandbox", "local"])
    said = " ".join(score.output.split())
    assert "pristine env/" in said and "AttributeError" in said, score.output
    assert "Traceback" not in score.output and len(score.output.splitlines()) < 8, score.output
    assert score.exception is None or isinstance(score.exception, SystemExit)
