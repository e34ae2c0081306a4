"""MLAgentBench's timing task and failure values (issue 41, item 6).

MLAgentBench's vectorization scores the runtime its submission wrote itself (``submission.csv``)
and its ``eval.py`` returns ``1e10`` when it cannot read one. Decided: a self-reported runtime
against a baseline timed elsewhere is shown but never a success ("not comparable"); the failure
value is a failure (no value, never in a mean). The folder is this file's own, shaped like
MLAgentBench's (recognised by content: ``vectoris``, ``submission.csv``, ``submission.columns[0]``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.scoring.baselines import fall_back
from environments.scoring.evaluate import EvalResult, evaluate
from environments.scoring.score import make_score
from environments.task.spec import load_task

TRAIN = '''\
import time

start = time.time()
total = 0
for i in range(200_000):  # the loop a submission would vectorise
    total += i * i
elapsed = time.time() - start
print(f"Time taken for execution: {elapsed} s")
with open("submission.csv", "w") as f:
    f.write(f"{elapsed}\\n")
'''
EVAL = '''\
import os

import pandas as pd


def get_score(submission_path="../env"):
    try:
        submission = pd.read_csv(os.path.join(submission_path, "submission.csv"), delimiter=";")
        return float(submission.columns[0])
    except Exception:
        return 1e10
'''
PROBLEM = ("Given a script train.py, execute it to see the current execution speed, then try "
           "to improve it by vectorising the loop with numpy. Store the run time in a "
           "submission.csv as shown in train.py.\n")


def make_vectorization(root: Path, toml: str | None = None) -> Path:
    (root / "env").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "env" / "train.py").write_text(TRAIN)
    (root / "scripts" / "eval.py").write_text(EVAL)
    (root / "scripts" / "research_problem.txt").write_text(PROBLEM)
    if toml is not None:
        (root / "task.toml").write_text(toml)
    return root


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path / "home"))


def test_a_self_reported_runtime_is_never_a_success(tmp_path, home):
    task = load_task(make_vectorization(tmp_path / "vectorization"))
    assert task.mlagentbench is not None and task.mlagentbench.task == "vectorization"
    fall_back(task, RuntimeError("numpy<2 cannot be satisfied"))  # the issue's: the fixed 6.1742
    score = make_score(task, EvalResult(value=3.0), step=None)
    assert score.improvement is not None and score.improvement > 0.4
    assert score.success is False and "not comparable" in score.detail


def test_mlagentbenchs_failure_value_is_a_failure_not_a_score(tmp_path, home):
    from environments.scoring.evaluate import _unless_sentinel

    task = load_task(make_vectorization(tmp_path / "vectorization"))
    failed = _unless_sentinel(task, EvalResult(value=1e10, seconds=1.0))
    assert failed.value is None and failed.failure == "eval_error" and "1e+10" in failed.detail
    score = make_score(task, failed, step=None)
    assert score.value is None and score.improvement is None and not score.success
    assert _unless_sentinel(task, EvalResult(value=5.0)).value == 5.0
    own = load_task(make_vectorization(tmp_path / "own", toml='metric = "s"\ndirection = "lower"\n'))
    assert own.mlagentbench is None  # a task.toml is labcoat's declaration: nothing is read into it
    assert _unless_sentinel(own, EvalResult(value=1e10)).value == 1e10


@pytest.mark.slow  # builds MLAgentBench's numpy<2 / pandas<3 environment (the pip configuration's index)
def test_the_do_nothing_agent_on_vectorization_is_no_success(tmp_path, home):
    task = load_task(make_vectorization(tmp_path / "vectorization"))
    ws = tmp_path / "ws"
    (ws).mkdir()
    (ws / "train.py").write_text(TRAIN)
    (ws / "submission.csv").write_text("0.5\n")  # what its unchanged train.py would write
    result = evaluate(task, ws, sandbox="local")
    assert result.value == 0.5, result
    fall_back(task, RuntimeError("not measured in this test"))
    score = make_score(task, result, step=None)
    assert score.improvement > 0.9 and score.success is False and "not comparable" in score.detail
    (ws / "submission.csv").unlink()
    missing = evaluate(task, ws, sandbox="local")
    assert missing.value is None and missing.failure == "eval_error" and "1e+10" in missing.detail


def test_a_baseline_that_could_not_be_measured_is_an_error_not_mlagentbenchs_number(
        tmp_path, home, monkeypatch):
    """The issue's case: the sandbox could not install numpy<2, and the failed measurement was
    stored as "the task cannot run" with MLAgentBench's fixed 6.17 s used in its place."""
    from environments.scoring import baselines
    from sandbox.pyenv import PyEnvError

    task = load_task(make_vectorization(tmp_path / "vectorization"))

    def cannot(*args, **kwargs):
        raise PyEnvError("the task's Python requirement 'numpy<2' cannot be satisfied from the index")

    monkeypatch.setattr(baselines, "measure", cannot)
    with pytest.raises(baselines.BaselineError, match="could not run.*numpy<2"):
        baselines.ensure_baseline(task, runs=1, sandbox="local")
    assert baselines.read_baseline(task) is None and baselines.find_baseline(task) is None
