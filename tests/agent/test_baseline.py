"""The no-LLM baseline agent: finds the numbers, searches within the budget, keeps the best."""

from __future__ import annotations

import json

import pytest

from agent.baseline import find_constants, read_metric, set_constant
from agent.runner import Budgets
from environments.runs import RunDir
from environments.scoring import score_run
from tests.agent.helpers import episode
from tests.conftest import write_task

SCRIPT = """\"\"\"A toy: the score peaks at WIDTH = 8 and falls for large RATE.\"\"\"
WIDTH = 2
RATE = 0.1  # a comment survives
SEED = 0
NAME = "x"
score = 10 - abs(WIDTH - 8) - (5 if RATE > 0.5 else 0)
open("result.txt", "w").write(str(score))
print(f"epoch 1: train total 1.0, validation total {score}")
"""


def test_find_and_set_constants():
    knobs = {k.name: k for k in find_constants(SCRIPT, "train.py")}
    assert set(knobs) == {"WIDTH", "RATE"}  # SEED and strings are left alone
    assert knobs["WIDTH"].candidates == [1, 4, 8] and knobs["RATE"].candidates == [0.03, 0.3, 1.0]
    edited = set_constant(SCRIPT, "RATE", 0.3)
    assert "RATE = 0.3  # a comment survives" in edited and "WIDTH = 2\n" in edited


def test_read_metric_prefers_the_validation_number():
    out = "epoch 1: loss 0.9, validation accuracy 0.512\nepoch 2: loss 0.5, validation accuracy 0.734\ntest"
    assert read_metric(out, "accuracy") == 0.734
    assert read_metric("val_loss: 0.25 after 3 epochs", "loss") == 0.25
    assert read_metric("accuracy = 91.5", "accuracy") == 91.5
    assert read_metric("nothing to see", "accuracy") is None


def test_baseline_search_keeps_the_best_edit(tmp_path):
    task = write_task(tmp_path / "toy", files={"env/train.py": SCRIPT}, toml=(
        'metric = "total"\ndirection = "higher"\nbaseline = 4.0\nsolve = ["train.py"]\n'))
    run, spec, meta = episode(task, tmp_path, "baseline/hparam")
    assert meta.status == "finished" and meta.actor == "baseline"
    assert "WIDTH': 8" in meta.final_answer and "10" in meta.final_answer
    text = (run.workspace / "train.py").read_text()
    assert "WIDTH = 8" in text and "RATE = 0.1" in text
    assert (run.workspace / "result.txt").read_text() == "10"  # the best version's outputs
    assert score_run(run, spec, sandbox="local").success


def test_declared_hparams_and_the_step_budget(tmp_path):
    toml = ('metric = "total"\ndirection = "higher"\nbaseline = 4.0\nsolve = ["train.py"]\n'
            '[[hparams]]\nfile = "train.py"\nname = "WIDTH"\nvalues = [3, 7, 9]\n')
    task = write_task(tmp_path / "toy", files={"env/train.py": SCRIPT}, toml=toml)
    run, _, meta = episode(task, tmp_path, "baseline/hparam", budgets=Budgets(max_steps=7))
    steps = RunDir.open(run.path).steps()
    trials = [s.meta["trial"] for s in steps if s.action == "Write File"]
    assert trials == [{"WIDTH": 3}]  # 1 start run + 1 trial (2 steps) + 3 steps kept in reserve
    assert steps[-1].action == "Final Answer" and meta.status == "finished"
    assert "RATE" not in json.dumps(trials)


def test_without_numbers_it_answers_at_once(tmp_path):
    task = write_task(tmp_path / "toy")  # train.py has no constants
    run, _, meta = episode(task, tmp_path, "baseline/hparam")
    assert meta.status == "finished" and [s.action for s in run.steps()] == ["Final Answer"]
    assert "no tunable numbers" in meta.final_answer


def test_proposals_are_built_from_the_actions_own_models():
    from agent.actor import proposal
    from environments.low_level import ExecuteArgs, WriteFileArgs

    p = proposal(ExecuteArgs(script_name="train.py"), trial="start")
    assert (p.action, p.args, p.meta) == ("Execute Script", {"script_name": "train.py", "arguments": ""},
                                          {"trial": "start"})
    with pytest.raises(TypeError, match="name the action"):  # Write File and Append File share it
        proposal(WriteFileArgs(file_name="a", content=""))
    with pytest.raises(TypeError, match="does not take"):
        proposal(WriteFileArgs(file_name="a", content=""), "Execute Script")
    assert proposal(WriteFileArgs(file_name="a", content="x"), "Append File").action == "Append File"
