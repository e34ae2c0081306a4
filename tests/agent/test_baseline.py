"""The no-LLM baseline agent: finds the numbers, searches within the budget, keeps the best."""

from __future__ import annotations

import json

import pytest

from agent.baseline import (
    find_constants,
    find_keywords,
    read_metric,
    read_proxy,
    set_constant,
    set_value,
)
from agent.runner import Budgets, RunHooks
from environments.record.runs import RunDir
from environments.scoring.score import score_run
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
    assert read_metric("data/a.npz: validation accuracy 0.812", "mean_test_acc") == 0.812
    assert read_metric("training-task MSE 7.723 (per task: [11.21, 12.2])", "heldout_mse") == 7.723
    assert read_metric("validation MAE: 45,706\nwrote submission.csv with 800 predictions", "mae") == 45706
    assert read_metric("validation loss 1,25 per batch", "loss") == 1.0  # a list, not thousands
    assert read_metric("epoch 40: loss=0.2269\nseed 0: validation error 23.41%  cpu 10.4 s", "test_error") == 23.41
    # a dev file's name is no number (offline-irl's check_dev.py read as 9)
    assert read_metric("data/dev/dev_19.npz: subset recall 0.639  false-in 0", "subset_recall") == 0.639


def test_settings_passed_by_keyword_are_knobs_too():
    src = "m = Forest(n_estimators=50, max_depth=6, random_state=SEED)\nsplit(x, test_size=0.2)\n"
    knobs = find_keywords(src, "train.py")
    assert [(k.name, k.value) for k in knobs] == [("n_estimators", 50), ("max_depth", 6)]
    edited = set_value(set_value(src, knobs[0], 100), knobs[1], 12)
    assert edited.startswith("m = Forest(n_estimators=100, max_depth=12, random_state=SEED)")
    config = 'CONFIG = {"lr": 1e-3, "optimizer": "adam", "epochs": 40}\n'
    knobs = find_keywords(config, "rule.py")
    assert [(k.name, k.value) for k in knobs] == [("lr", 1e-3), ("epochs", 40)]
    assert set_value(config, knobs[0], 0.003) == 'CONFIG = {"lr": 0.003, "optimizer": "adam", "epochs": 40}\n'


def test_a_dev_scripts_mean_line_says_which_way_is_better():
    assert read_proxy("seed 0: regret/s 3.1\nmean regret/s: 12.30 +- 0.5 (s.e.)") == (12.3, False)
    assert read_proxy("mean grad evals to KL <= 0.5: 1234") == (1234.0, False)
    assert read_proxy("train-image accuracy per student: [0.9, 0.8], mean 0.850") == (0.85, True)
    assert read_proxy("mean of something: 3") is None  # its words do not say


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


def test_without_numbers_it_still_runs_and_submits_the_start(tmp_path):
    task = write_task(tmp_path / "toy")  # train.py has no constants
    run, _, meta = episode(task, tmp_path, "baseline/hparam")
    assert meta.status == "finished"
    assert [s.action for s in run.steps()] == ["Execute Script", "Final Answer"]
    assert (run.workspace / "result.txt").read_text() == "6"  # the starting version's submission
    assert "ran train.py" in meta.final_answer and "no tunable numbers" in meta.final_answer


def test_a_script_named_outside_the_workspace_is_no_starting_script(tmp_path):
    """The research problem's paths are read like an actor's: one the guard refuses names no
    script of the workspace (it once ended the run with an error)."""
    task = write_task(tmp_path / "toy", files={
        "env/train.py": SCRIPT, "scripts/research_problem.txt": "Run python ../evil.py, then python /abs/x.py."})
    run, _, meta = episode(task, tmp_path, "baseline/hparam")
    assert meta.status == "finished" and "WIDTH': 8" in meta.final_answer
    assert run.steps()[0].args["script_name"] == "train.py"


QUIET = """WIDTH = 2
open("result.txt", "w").write(str(10 - abs(WIDTH - 8)))
print("done")
"""
VALIDATING_EVAL = """
import os
def get_score(submission_folder):
    path = os.path.join(submission_folder, "result.txt")
    if not os.path.exists(path):
        raise FileNotFoundError("no result.txt")
    return float(open(path).read())
get_validation_score = get_score
"""
HPARAMS = '[[hparams]]\nfile = "train.py"\nname = "WIDTH"\nvalues = [4, 8, 12]\n'
TOML = 'metric = "total"\ndirection = "higher"\nbaseline = 4.0\nsolve = ["train.py"]\n'


def test_a_script_that_prints_no_metric_is_measured_by_validation(tmp_path):
    toml = TOML + '[feedback]\nkind = "validation"\nbudget = 5\n' + HPARAMS
    task = write_task(tmp_path / "toy", files={"env/train.py": QUIET}, toml=toml,
                      eval_body=VALIDATING_EVAL)
    run, _, meta = episode(task, tmp_path, "baseline/hparam")
    steps = run.steps()
    assert meta.status == "finished" and "validation total (Validate Submission) 10" in meta.final_answer
    assert [s.action for s in steps[:2]] == ["Execute Script", "Validate Submission"]
    tried = [s.meta["trial"] for s in steps if s.action == "Validate Submission"]
    assert tried == ["start", {"WIDTH": 4}, {"WIDTH": 8}, {"WIDTH": 12}]
    assert "WIDTH = 8" in (run.workspace / "train.py").read_text()
    assert (run.workspace / "result.txt").read_text() == "10"


def test_without_a_metric_or_validation_it_keeps_the_first_version_and_says_why(tmp_path):
    """It still runs a changed version once (an attempt, said), then puts the start back."""
    task = write_task(tmp_path / "toy", files={"env/train.py": QUIET}, toml=TOML + HPARAMS)
    run, _, meta = episode(task, tmp_path, "baseline/hparam")
    steps = run.steps()
    assert [s.action for s in steps] == ["Execute Script", "Write File", "Execute Script", "Write File",
                                         "Execute Script", "Final Answer"]
    assert steps[2].meta["trial"] == {"WIDTH": 4} and "WIDTH=4 ran" in meta.final_answer
    assert "kept the first working version" in meta.final_answer
    assert "WIDTH = 2" in (run.workspace / "train.py").read_text()
    assert "offers no validation feedback" in meta.final_answer and "WIDTH" in meta.final_answer
    assert (run.workspace / "result.txt").read_text() == "4"


def test_a_starter_that_writes_no_submission_says_so(tmp_path):
    task = write_task(tmp_path / "toy", files={
        "env/train.py": "LR = 0.1\nOUT = 'submission.csv'  # forgot to write it\nprint('validation total 3')\n",
        "scripts/research_problem.txt": "train.py writes submission.csv; make it better."})
    run, _, meta = episode(task, tmp_path, "baseline/hparam")
    assert [s.action for s in run.steps()] == ["Execute Script", "Final Answer"]
    assert "wrote no submission.csv" in meta.final_answer and "validation total 3" in meta.final_answer


class RejectFirst:
    """A reviewer who rejects the first trial's proposal of one action (WIDTH 2 -> 3) and
    approves the rest."""

    def __init__(self, action: str) -> None:
        self.action, self.rejected = action, 0

    def review(self, proposal):
        from agent.approval import Decision

        if proposal.action == self.action and proposal.meta.get("trial") != "start" and not self.rejected:
            self.rejected += 1
            return Decision.reject("not that one")
        return Decision.approve()


@pytest.mark.parametrize("rejected", ["Write File", "Execute Script"])
def test_a_rejected_proposal_is_not_recorded_as_a_trial(tmp_path, rejected):
    from agent.approval import ApprovingActor
    from agent.factory import make_actor
    from agent.runner import create_run, drive

    toml = TOML + '[[hparams]]\nfile = "train.py"\nname = "WIDTH"\nvalues = [3, 8]\n'
    task = write_task(tmp_path / "toy", files={"env/train.py": SCRIPT}, toml=toml)
    actor = ApprovingActor(make_actor(model="baseline/hparam"), RejectFirst(rejected))
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model="baseline/hparam")
    meta = drive(run, spec, actor)
    steps = RunDir.open(run.path).steps()
    trials = [(s.action, s.meta.get("trial")) for s in steps]
    assert ("Execute Script", {"WIDTH": 3}) not in trials  # the next run is not WIDTH=3's result
    assert ("Write File", {"WIDTH": 3}) in trials if rejected == "Execute Script" else trials[1] == (
        "Write File", {"WIDTH": 8})
    assert next(s for s in steps if s.meta.get("rejected")).meta["rejected"][0]["action"] == rejected
    assert "WIDTH=3 rejected by the reviewer, not tried" in meta.final_answer
    assert "WIDTH=3 ->" not in meta.final_answer and "WIDTH': 8" in meta.final_answer
    assert "WIDTH = 8" in (run.workspace / "train.py").read_text()
    assert (run.workspace / "result.txt").read_text() == "10"


def test_proposals_are_built_from_the_actions_own_models():
    from agent.actor import proposal
    from environments.acting.low_level import ExecuteArgs, WriteFileArgs

    p = proposal(ExecuteArgs(script_name="train.py"), trial="start")
    assert (p.action, p.args, p.meta) == ("Execute Script", {"script_name": "train.py", "arguments": ""},
                                          {"trial": "start"})
    with pytest.raises(TypeError, match="name the action"):  # Write File and Append File share it
        proposal(WriteFileArgs(file_name="a", content=""))
    with pytest.raises(TypeError, match="does not take"):
        proposal(WriteFileArgs(file_name="a", content=""), "Execute Script")
    assert proposal(WriteFileArgs(file_name="a", content="x"), "Append File").action == "Append File"


TUPLE = """\"\"\"No plain number to tune: the settings are one tuple, the mode a string.\"\"\"
WIDTH, RATE = 2, 0.1
MODE = "sum"
score = 10 - abs(WIDTH - 8) + (1 if MODE == "max" else 0)
open("result.txt", "w").write(str(score))
print(f"this version makes {score} points")
"""
DECLARED = TOML + (
    '[[hparams]]\nfile = "train.py"\nname = "WIDTH"\npattern = \'^WIDTH, RATE = (\\d+),\'\nvalues = [4, 8, 12]\n'
    '[[hparams]]\nfile = "train.py"\nname = "MODE"\nvalues = ["max"]\n'
    '[measure]\npattern = \'makes (\\d+) points\'\n')


def test_a_task_with_declared_knobs_gets_a_changed_script_run(tmp_path):
    """A tuple's element found by a pattern, a string knob, and the task's own [measure]: the
    agent makes a real attempt where it found no number of its own (issue 42, item 6)."""
    task = write_task(tmp_path / "toy", files={"env/train.py": TUPLE}, toml=DECLARED)
    run, _, meta = episode(task, tmp_path, "baseline/hparam")
    steps = run.steps()
    runs = [s.meta["trial"] for s in steps if s.action == "Execute Script"]
    assert {"WIDTH": 4} in runs and {"MODE": "max"} in runs
    text = (run.workspace / "train.py").read_text()
    assert "WIDTH, RATE = 8, 0.1" in text and "MODE = 'max'" in text
    assert (run.workspace / "result.txt").read_text() == "11"
    assert "the number [measure] finds in train.py's output 11" in meta.final_answer


def test_declared_knobs_are_checked_by_the_schema(tmp_path):
    from environments.task.spec import TaskError, load_task

    bad = TOML + '[measure]\npattern = "makes \\\\d+ points"\n'  # no group around the number
    with pytest.raises(TaskError, match="group"):
        load_task(write_task(tmp_path / "a", toml=bad))
    with pytest.raises(TaskError, match="regular expression"):
        load_task(write_task(tmp_path / "b", toml=TOML + '[[hparams]]\nfile = "t.py"\nname = "X"\npattern = "(("\n'))


def test_a_code_knob_replaces_its_block_and_puts_it_back():
    from agent.baseline import declared_knob
    from environments.task.spec import HParam

    src = "def f(x):\n    y = x * 2\n    return y\n"
    h = HParam(file="f.py", name="body", pattern=r"(?s)(    y = .*?return y\n)", values=["    return x + x\n"])
    knob = declared_knob(h, src)
    new = set_value(src, knob, knob.candidates[0])
    assert new == "def f(x):\n    return x + x\n"
    assert set_value(new, knob, knob.value, knob.candidates[0]) == src  # the pattern no longer matches


def _suite_knobs(spec) -> list:
    """What the baseline agent would search in a suite task's pristine env/ (no sandbox)."""
    from agent.baseline import declared_knob, find_constants, find_keywords

    if spec.hparams:
        knobs = [declared_knob(h, (spec.env_dir / h.file).read_text()) for h in spec.hparams]
        assert not [k for k in knobs if isinstance(k, str)], (spec.name, knobs)
        return knobs
    if spec.timed:
        return []
    files = [f for f in spec.solve if f.endswith(".py")] or [p.name for p in spec.env_dir.glob("*.py")]
    return [k for f in files if not spec.is_read_only(f) and (spec.env_dir / f).is_file()
            for k in find_constants((spec.env_dir / f).read_text(), f)
            + find_keywords((spec.env_dir / f).read_text(), f)]


def test_every_suite_task_has_something_for_the_baseline_to_tune():
    """The default agent makes a real attempt on every suite task: each has declared knobs that
    its files define, or numbers of its own the agent finds (issue 42, item 6)."""
    from environments.task.spec import load_task
    from environments.task.suite import suite_task_dirs

    bare = [d.name for d in suite_task_dirs() if not _suite_knobs(load_task(d))]
    assert bare == []


class StopAfter(RunHooks):
    """Hooks that press Ctrl-C once step ``n`` is recorded."""

    def __init__(self, n: int) -> None:
        self.n = n

    def after_step(self, run, step) -> None:
        if step is not None and step.index == self.n:
            raise KeyboardInterrupt


def test_a_resumed_search_remembers_its_trials(tmp_path):
    """Stopped between a trial's write and its run, the resumed agent goes on with its start,
    its trials and its best as recorded (issue 42, item 5): not a new search from the
    half-edited workspace."""
    from agent import session
    from agent.factory import make_actor
    from agent.runner import create_run, drive
    from tui.cli.display import ending

    toml = TOML + '[[hparams]]\nfile = "train.py"\nname = "WIDTH"\nvalues = [3, 8]\n'
    task = write_task(tmp_path / "toy", files={"env/train.py": SCRIPT}, toml=toml)
    actor = make_actor(model="baseline/hparam")
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model="baseline/hparam")
    meta = drive(run, spec, actor, hooks=StopAfter(4))  # start, WIDTH=3 written and run, WIDTH=8 written
    assert meta.status == "interrupted" and "WIDTH = 8" in (run.workspace / "train.py").read_text()
    assert ending(run).startswith("interrupted: Ctrl-C") and "interrupted: interrupted" not in ending(run)
    meta = session.resume(run.path).drive()
    steps = RunDir.open(run.path).steps()
    assert meta.status == "finished" and [s.meta.get("trial") for s in steps[4:6]] == [{"WIDTH": 8}, None]
    assert "from 4 " in meta.final_answer and "WIDTH=3 -> 5" in meta.final_answer
    assert "WIDTH=8 -> 10" in meta.final_answer and "WIDTH': 8" in meta.final_answer


def test_an_interrupted_runs_score_is_no_verdict(capsys):
    from types import SimpleNamespace

    from tui.cli.common import print_score

    s = SimpleNamespace(value=0.8, failure=None, detail="", metric="accuracy", baseline=0.7, success=True,
                        threshold=0.1, improvement=0.14, interval=None, baseline_source=None)
    print_score(s, so_far=4)
    out = capsys.readouterr().out
    assert "no verdict: interrupted after step 4" in out and "success" not in out
