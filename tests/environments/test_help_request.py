"""Request Help: a clear refusal with nobody attending, answers from a file in order (resumes
included), a person answering from another thread; and, for both optional actions, how a run
enables them, keeps them on resume, and refuses unknown names up front."""

from __future__ import annotations

import json
import threading

import pytest

from agent import session
from agent.config import ActorConfig, OptionError, build
from agent.replay import ReplayActor
from agent.runner import Budgets, create_run, drive
from agent.session import SessionError, preflight
from environments.acting.environment import Environment, optional_actions
from environments.acting.help_request import (
    ANSWERED,
    NO_MORE,
    REQUEST_HELP,
    UNATTENDED,
    HelpError,
    PersonDesk,
    ScriptedAnswers,
)
from environments.acting.repl import PYTHON_REPL, RESTARTED
from environments.record.runs import RunDir
from environments.task.spec import load_task
from tests.conftest import write_task
from tests.sandbox.backends import make_sandbox


@pytest.fixture
def task(tmp_path):
    return load_task(write_task(tmp_path / "task"))


def _env(task, tmp_path, desk=None) -> Environment:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return Environment(task, ws, make_sandbox("local", ws),
                       extra_actions=optional_actions([REQUEST_HELP], desk))


def ask(env, text="which optimiser?"):
    return env.step(REQUEST_HELP, {"request": text})


def test_nobody_attending_is_a_clear_refusal(task, tmp_path):
    env = _env(task, tmp_path)
    try:
        obs = ask(env)
        assert obs.text == UNATTENDED and not obs.error and obs.data == {"answered_by": None}
        assert PYTHON_REPL not in env.actions  # each optional action is enabled on its own
    finally:
        env.sandbox.close()


def test_scripted_answers_come_in_order_and_a_resume_goes_on_with_the_next(task, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('"use Adam"\n\n{"answer": "lr 3e-4"}\n')
    env = _env(task, tmp_path, ScriptedAnswers.from_file(answers))
    try:
        assert ask(env).text == ANSWERED + "use Adam"
        # a resumed run: a new desk and environment over the same steps
        again = Environment(env.task, env.workspace, env.sandbox, extra_actions=optional_actions(
            [REQUEST_HELP], ScriptedAnswers.from_file(answers)))
        again._session = list(env.steps())
        assert ask(again).text == ANSWERED + "lr 3e-4"
        assert ask(again).text == NO_MORE
    finally:
        env.sandbox.close()
    listed = tmp_path / "answers.json"
    listed.write_text(json.dumps(["a", {"answer": "b"}]))
    assert ScriptedAnswers.from_file(listed).answers == ["a", "b"]


@pytest.mark.parametrize("content, problem", [
    ('{"answer": 3}\n', "must be a string"),
    ('{"answers": ["x"]}', "must be a string"),
    ("not json\n", "not valid JSON"),
    ("[" * 20 + "]" * 20, "nested deeper"),
    (None, "cannot read"),
    ("x" * (2 << 20), "at most"),
])
def test_a_bad_answers_file_is_refused_with_its_reason(tmp_path, content, problem):
    path = tmp_path / "answers.jsonl"
    if content is not None:
        path.write_text(content)
    with pytest.raises(HelpError, match=problem):
        ScriptedAnswers.from_file(path)


def test_a_person_answers_from_another_thread_and_stopping_answers_none():
    asked = threading.Event()
    desk = PersonDesk(notify=lambda request: asked.set())
    got = []
    worker = threading.Thread(target=lambda: got.append(desk.ask("help?", 0)))
    worker.start()
    assert asked.wait(10) and desk.pending == "help?"
    desk.answer("try this")
    worker.join(10)
    assert got == ["try this"] and desk.pending is None
    desk.stop()
    assert desk.ask("again?", 1) is None  # after a stop nothing waits


def test_a_run_keeps_its_enabled_actions_and_answers_file_across_a_resume(tmp_path):
    task = write_task(tmp_path / "task")
    actions = tmp_path / "actions.jsonl"
    actions.write_text("\n".join(json.dumps(x) for x in [
        {"action": "Request Help", "args": {"request": "may I use numpy?"}},
        {"action": "Python REPL", "args": {"command": "import numpy; v = 40"}},
        {"action": "Python REPL", "args": {"command": "v + 2"}},
        {"action": "Request Help", "args": {"request": "and then?"}},
        {"action": "Final Answer", "args": {"final_answer": "done"}},
    ]) + "\n")
    answers = tmp_path / "answers.json"
    answers.write_text('["yes"]')
    config, _ = build({"kind": "replay", "actions": str(actions), "enable_actions": "python repl,request-help",
                       "help_answers": str(answers)})
    assert config.enable_actions == "Python REPL, Request Help"
    preflight(config, task)
    actor = ReplayActor.from_file(actions)
    run, spec = create_run(task, actor, tmp_path / "runs", config=config, sandbox="local",
                           budgets=Budgets(max_steps=2))
    drive(run, spec, actor)  # stops after the REPL's first call: a budget
    stored = ActorConfig.from_meta(RunDir.open(run.path).meta)
    assert stored.enable_actions == "Python REPL, Request Help" and stored.help_answers == str(answers)
    run = RunDir.open(run.path)
    run.meta.budgets = run.meta.budgets.model_copy(update={"max_steps": 10})
    drive(run, spec, ReplayActor.from_file(actions))  # resumed: what run.json enabled, again
    steps = RunDir.open(run.path).steps()
    assert [s.observation.splitlines()[0] for s in steps[:2]] == [ANSWERED.strip(), "(the code printed nothing)"]
    assert steps[0].observation == ANSWERED + "yes"
    assert steps[2].error and steps[2].observation.startswith(RESTARTED) and "NameError" in steps[2].observation
    assert steps[3].observation == NO_MORE and steps[4].action == "Final Answer"


def test_unknown_names_and_unoffered_actions_are_refused_before_a_run(tmp_path):
    with pytest.raises(OptionError, match="--enable-actions: .*no optional action 'Request Halp'"):
        build({"enable_actions": "Request Halp"})
    task = write_task(tmp_path / "task")
    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"action": "Python REPL", "args": {"command": "1"}}) + "\n")
    with pytest.raises(SessionError, match="offers no action 'Python REPL'"):
        preflight(ActorConfig(kind="replay", actions=str(actions)), task)
    preflight(ActorConfig(kind="replay", actions=str(actions), enable_actions="Python REPL"), task)
    with pytest.raises(SessionError, match="--help-answers: .*cannot read"):
        session.start(task, ActorConfig(kind="replay", actions=str(actions), enable_actions="Request Help",
                                        help_answers=str(tmp_path / "none.json")), runs_dir=tmp_path / "runs")
    assert not (tmp_path / "runs").exists()  # refused before anything was written


def test_a_fork_inherits_repl_steps_as_recorded_and_its_repl_starts_empty(tmp_path):
    from agent.fork import fork_config

    task = write_task(tmp_path / "task")
    actions = tmp_path / "actions.jsonl"
    actions.write_text("\n".join(json.dumps({"action": "Python REPL", "args": {"command": c}})
                                 for c in ("import time; t = time.time_ns(); t", "t")) + "\n")
    config, _ = build({"kind": "replay", "actions": str(actions), "enable_actions": "Python REPL"})
    actor = ReplayActor.from_file(actions)
    parent, spec = create_run(task, actor, tmp_path / "runs", config=config, sandbox="local")
    drive(parent, spec, actor)
    first = RunDir.open(parent.path).steps()[0].observation
    fork_cfg, budgets = fork_config(RunDir.open(parent.path), {})
    assert fork_cfg.enable_actions == "Python REPL"
    child = session.fork(RunDir.open(parent.path), 1, fork_cfg, budgets)
    child.drive()
    steps = RunDir.open(child.run.path).steps()
    assert steps[0].inherited and steps[0].observation == first  # recorded, not run again
    assert steps[1].observation.startswith(RESTARTED) and "NameError" in steps[1].observation
