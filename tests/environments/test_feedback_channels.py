"""Feedback channels: a task declares the test signal an actor may get (``[feedback]`` in
task.toml: none, or validation with a budget) and the harness enforces it: the action is not
offered otherwise, is refused once spent, shows nothing hidden, and every call and what it
returned can be read back from the trace (``validation_calls``)."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment
from environments.acting.validation import VALIDATE, ValidateArgs, validation_calls
from environments.task.spec import TaskError, load_task
from sandbox import open_sandbox
from tests.environments.test_scoring import (
    HONEST,
    SECRET,
    TAMPER_EVAL,
    run_actions,
    tamper_task,
    write,
)

VALIDATION = '[feedback]\nkind = "validation"\nbudget = 2\n'
VALIDATE_STEP = {"action": VALIDATE, "args": {}}


def test_the_default_channel_is_none(tmp_path):
    task = load_task(tamper_task(tmp_path / "t"))
    assert task.feedback.kind == "none" and task.validation_budget == 0


@pytest.mark.parametrize(("extra", "problem"), [
    ('[feedback]\nkind = "validation"\n', "needs budget >= 1"),
    ('[feedback]\nkind = "none"\nbudget = 3\n', "takes no budget"),
    ('[feedback]\nkind = "test-set"\nbudget = 3\n', "feedback.kind"),
    ('[feedback]\nkind = "validation"\nbudget = -1\n', "feedback.budget"),
    ("validation_budget = 2\n", 'kind = "validation", budget = N'),
])
def test_a_bad_declaration_is_a_clear_error(tmp_path, extra, problem):
    with pytest.raises(TaskError, match=re.escape(problem)):
        load_task(tamper_task(tmp_path / "t", extra))


def test_a_validation_channel_needs_a_search_split_to_score_on(tmp_path):
    root = tamper_task(tmp_path / "t", VALIDATION)
    (root / "scripts" / "eval.py").write_text(TAMPER_EVAL.replace("validation_score", "other"))
    with pytest.raises(TaskError, match=r"search split.*\[splits.search\]"):
        load_task(root)


def test_a_declared_split_needs_its_function(tmp_path):
    root = tamper_task(tmp_path / "t", '[splits.select]\nabout = "the other half"\n')
    with pytest.raises(TaskError, match=r"\[splits.select\] needs select_score\(\)"):
        load_task(root)
    root = tamper_task(tmp_path / "u", '[splits.holdout]\nabout = "x"\n')
    with pytest.raises(TaskError, match="a split is one of search, select, test"):
        load_task(root)


def test_without_a_channel_validation_is_not_an_action(tmp_path):
    run, _ = run_actions(tamper_task(tmp_path / "t"), tmp_path, [VALIDATE_STEP])
    step = run.steps()[-1]
    assert step.error and "Invalid action" in step.observation
    assert VALIDATE not in step.observation.split("Valid actions are")[1]  # not offered
    assert validation_calls(run.steps())[0].counted is False


def test_no_other_part_may_offer_validation(tmp_path):
    root = tamper_task(tmp_path / "t")
    smuggled = ActionSpec("validate submission", "score me", ValidateArgs, lambda env, args: None)
    with open_sandbox("local", tmp_path) as sb, pytest.raises(ValueError, match=r"\[feedback\]"):
        Environment(load_task(root), tmp_path, sb, extra_actions=[smuggled])


def test_every_call_and_its_result_is_in_the_trace(tmp_path):
    actions = [VALIDATE_STEP, write("model.py", HONEST), VALIDATE_STEP, VALIDATE_STEP]
    run, _ = run_actions(tamper_task(tmp_path / "t", VALIDATION), tmp_path, actions)
    calls = validation_calls(run.steps())
    assert [c.step for c in calls] == [1, 3, 4]
    assert [c.counted for c in calls] == [True, True, False]
    assert [c.value for c in calls] == [0.5, 1.0, None]
    assert [c.left for c in calls] == [1, 0, 0] and calls[0].metric == "accuracy"
    assert "No validation budget left" in calls[2].observation
    # the same from the raw trace, as a manifest reads it
    rows = [json.loads(line) for line in (run.path / "trace.jsonl").read_text().splitlines()]
    assert validation_calls(rows) == calls


def test_the_trusted_phase_output_is_never_shown(tmp_path):
    """A validation split whose scorer fails printing the hidden answers: the actor sees the
    failure reason, never the trusted phase's text."""
    root = tamper_task(tmp_path / "t", VALIDATION)
    leaky = TAMPER_EVAL + textwrap.dedent("""
        def validation_score(folder):
            print(open(HERE / "val_answers.txt").read())
            raise RuntimeError("answers were " + open(HERE / "val_answers.txt").read())
    """)
    (root / "scripts" / "eval.py").write_text(leaky)
    run, _ = run_actions(root, tmp_path, [write("model.py", HONEST), VALIDATE_STEP])
    call = validation_calls(run.steps())[-1]
    assert call.failure == "eval_error" and call.counted
    assert SECRET not in call.observation and SECRET not in json.dumps(run.steps()[-1].data)
