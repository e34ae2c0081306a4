"""A run's progress line says what each trial gave (issue 42, item 4): the task's metric as the
baseline agent reads it, never the script's last line or a warning; an edit of two settings on
one line names both."""

from __future__ import annotations

from environments.record.runs import Step
from tui.cli.display import step_summary

RAN = "The script has been executed. Here is the output:\n"
DIGITS = RAN + ("epoch 11/12: loss 0.412, validation accuracy 0.842\n"
                "epoch 12/12: loss 0.398, validation accuracy 0.854\n"
                "wrote submission.csv with 700 predictions\n")


def _step(action: str, args, observation: str = "ok", **kw) -> Step:
    return Step(index=2, actor="agent", action=action, args=args, observation=observation, **kw)


def test_a_script_run_shows_the_metric_it_printed():
    run = _step("Execute Script", {"script_name": "train.py"}, DIGITS, exit_code=0)
    assert step_summary(run, metric="accuracy") == "epoch 12/12: loss 0.398, validation accuracy 0.854"
    assert step_summary(run) == "epoch 12/12: loss 0.398, validation accuracy 0.854"  # metric unknown
    mae = RAN + "validation MAE 43,324\nwrote submission.csv with 800 predictions\n"
    assert step_summary(_step("Execute Script", {}, mae, exit_code=0), metric="mae") == "validation MAE 43,324"


def test_a_warning_is_never_the_summary():
    out = RAN + ("done training\n/x/sklearn/linear.py:469: ConvergenceWarning: lbfgs failed to converge\n"
                 "    n_iter_i = _check_optimize_result(\n")
    assert step_summary(_step("Execute Script", {}, out, exit_code=0)) == "done training"
    logged = RAN + "wrote model.pt\nWARNING: low disk\n"
    assert step_summary(_step("Execute Script", {}, logged, exit_code=0)) == "wrote model.pt"


def test_an_hparam_edit_names_each_changed_setting():
    before = "import x\nm = Forest(n_estimators=400, max_depth=6, random_state=0)\nprint(1)\n"
    after = "import x\nm = Forest(n_estimators=200, max_depth=12, random_state=0)\nprint(1)\n"
    write = _step("Write File", {"file_name": "train.py", "content": after})
    assert step_summary(write, before=before) == "train.py: n_estimators 400 → 200, max_depth 6 → 12"
    one = after.replace("max_depth=12", "max_depth=6")
    assert step_summary(_step("Write File", {"file_name": "train.py", "content": one}), before=before) == \
        "train.py: n_estimators 400 → 200"


def test_a_tuple_assignments_value_is_named_by_its_place():
    before = "STEPS, BATCH, LR = 8000, 64, 0.05\n"
    write = _step("Write File", {"file_name": "train.py", "content": "STEPS, BATCH, LR = 16000, 64, 0.05\n"})
    assert step_summary(write, before=before) == "train.py: STEPS 8000 → 16000"
    write = _step("Write File", {"file_name": "train.py", "content": "STEPS, BATCH, LR = 8000, 64, 0.1\n"})
    assert step_summary(write, before=before) == "train.py: LR 0.05 → 0.1"
