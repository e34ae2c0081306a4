"""An MLAgentBench-style task folder (no task.toml, no reference/) loads, runs and scores.

The folder is laid out as MLAgentBench's ``benchmarks/<task>/``: ``env/train.py``,
``scripts/prepare.py`` (here it makes the data instead of downloading it),
``scripts/eval.py`` with ``get_score(submission_folder)``, ``scripts/research_problem.txt``
and ``scripts/read_only_files.txt``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from environments.task.spec import DEFAULT_THRESHOLD, load_task
from tests import task_checks as th

PREPARE = '''
import csv, random
rng = random.Random(0)
rows = [(i, rng.uniform(-1, 1)) for i in range(200)]
with open("../env/train.csv", "w", newline="") as fh:
    w = csv.writer(fh); w.writerow(["id", "x", "y"])
    w.writerows((i, x, int(x > 0.1)) for i, x in rows[:150])
with open("../env/test.csv", "w", newline="") as fh:
    w = csv.writer(fh); w.writerow(["id", "x"])
    w.writerows((i, x) for i, x in rows[150:])
with open("answer.csv", "w", newline="") as fh:
    w = csv.writer(fh); w.writerow(["id", "y"])
    w.writerows((i, int(x > 0.1)) for i, x in rows[150:])
'''

EVAL = '''
import csv, os

def get_score(submission_folder="../env"):
    here = os.path.dirname(os.path.abspath(__file__))
    truth = {r["id"]: r["y"] for r in csv.DictReader(open(os.path.join(here, "answer.csv")))}
    path = os.path.join(submission_folder, "submission.csv")
    pred = {r["id"]: r["y"] for r in csv.DictReader(open(path))}
    return sum(pred.get(i) == y for i, y in truth.items()) / len(truth)

if __name__ == "__main__":
    print(get_score())
'''

TRAIN = '''
import csv
train = list(csv.DictReader(open("train.csv")))
test = list(csv.DictReader(open("test.csv")))
# a threshold at zero: the starting point an agent would improve
with open("submission.csv", "w", newline="") as fh:
    w = csv.writer(fh); w.writerow(["id", "y"])
    w.writerows((r["id"], int(float(r["x"]) > 0.0)) for r in test)
print("wrote submission.csv")
'''


@pytest.fixture
def mlab_task(tmp_path) -> Path:
    root = tmp_path / "benchmarks" / "threshold"
    (root / "env").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "env" / "train.py").write_text(textwrap.dedent(TRAIN))
    (root / "scripts" / "prepare.py").write_text(textwrap.dedent(PREPARE))
    (root / "scripts" / "eval.py").write_text(textwrap.dedent(EVAL))
    (root / "scripts" / "research_problem.txt").write_text(
        "Given a training set train.csv, train a model to predict y for test.csv, and save the "
        "per-row predictions to submission.csv.\n"
    )
    (root / "scripts" / "read_only_files.txt").write_text("./train.csv\n./test.csv\n")
    return root


def test_loads_with_defaults(mlab_task):
    spec = load_task(mlab_task)
    assert spec.name == "threshold"
    assert spec.kind == "classic" and spec.direction == "higher"
    assert spec.baseline is None and spec.success_threshold == DEFAULT_THRESHOLD
    assert spec.is_read_only("train.csv") and spec.is_read_only("test.csv")
    assert not spec.is_read_only("train.py")


def test_prepares_runs_and_scores(mlab_task, tmp_path):
    from environments.task.prepare import prepare_task

    spec = prepare_task(load_task(mlab_task), cache=tmp_path / "cache")
    assert (spec.env_dir / "train.csv").exists()
    assert (spec.scripts_dir / "answer.csv").exists()
    ws = th.make_workspace(spec, tmp_path / "ws")
    assert not (ws / "answer.csv").exists()

    # MLAgentBench's loop: the agent runs train.py, then eval.py's get_score is called
    th.solve(spec.model_copy(update={"solve": ["train.py"]}), ws)
    baseline = th.value(spec, ws)
    assert 0.8 < baseline < 1.0

    # an improved train.py (the right threshold) scores higher, through the same path
    train = ws / "train.py"
    train.write_text(train.read_text().replace("> 0.0)", "> 0.1)"))
    th.solve(spec.model_copy(update={"solve": ["train.py"]}), ws)
    assert th.value(spec, ws) == 1.0


def test_mlagentbench_task_names_get_their_metric_and_direction(tmp_path):
    """A folder named like MLAgentBench's house-price needs no task.toml to be lower-is-better."""
    root = tmp_path / "house-price"
    for rel, text in {"env/train.py": TRAIN, "scripts/eval.py": EVAL,
                      "scripts/research_problem.txt": "predict", "scripts/read_only_files.txt": ""}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    spec = load_task(root)
    assert (spec.metric, spec.direction, spec.solve) == ("mae", "lower", ["train.py"])
    (root / "task.toml").write_text('direction = "higher"\n')
    assert load_task(root).direction == "higher"  # a task.toml overrides the defaults


def test_pandas_is_importable_in_the_sandbox(tmp_path):
    """MLAgentBench's eval.py and train.py files import pandas."""
    from sandbox import SandboxLimits, open_sandbox

    with open_sandbox(th.SANDBOX, tmp_path, SandboxLimits(timeout=60)) as sb:
        r = sb.exec([sb.python, "-c", "import pandas; print(pandas.DataFrame({'a': [1]}).shape)"])
    assert r.ok and "(1, 1)" in r.stdout, r.stderr


MLAB_VECTORIZATION_EVAL = '''
import os
import pandas as pd

def get_score(submission_path="../env"):
    submission = pd.read_csv(os.path.join(submission_path, "submission.csv"), delimiter=";")
    return float(submission.columns[0])
'''
MLAB_VECTORIZATION_TRAIN = '''
import time
start = time.time()
sum(i * i for i in range(200_000))
open("submission.csv", "w").write(f"{time.time() - start}\\n")
'''


def test_an_mlagentbench_style_vectorization_folder_scores_with_its_own_baseline(tmp_path):
    """MLAgentBench's layout for vectorization (train.py writes its runtime to submission.csv,
    eval.py reads it with pandas): no task.toml, lower is better, a finite runtime, and a
    baseline stored under its own content hash, never the suite task's."""
    from environments.scoring.baselines import baseline_path, ensure_baseline, run_solve
    from environments.scoring.evaluate import evaluate

    root = tmp_path / "vectorization"
    for rel, text in {"env/train.py": MLAB_VECTORIZATION_TRAIN,
                      "scripts/eval.py": MLAB_VECTORIZATION_EVAL,
                      "scripts/research_problem.txt": "make train.py faster",
                      "scripts/read_only_files.txt": ""}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    spec = load_task(root)
    assert spec.direction == "lower" and spec.solve == ["train.py"]
    ws = th.make_workspace(spec, tmp_path / "ws")
    run_solve(spec, ws, sandbox=th.SANDBOX)
    result = evaluate(spec, ws, sandbox=th.SANDBOX)
    assert result.value is not None and 0 < result.value < 1e9, result.detail
    ensure_baseline(spec, runs=1, sandbox=th.SANDBOX)
    assert baseline_path(spec) != baseline_path(th.task_spec("vectorization"))
    assert baseline_path(spec).exists()
