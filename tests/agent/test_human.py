"""A person as an actor, headless: their steps go through ``drive`` like any actor's, with the
same trace, budgets, endings and resume."""

from __future__ import annotations

import threading

import pytest

from agent import session
from agent.actor import Proposal, StoppedWhileWaiting
from agent.config import ActorConfig
from agent.human import HumanActor, HumanRun, RunOver
from agent.replay import ReplayActor
from agent.runner import Budgets, create_run, drive
from environments.record.runs import RunDir

ACTIONS = [
    ("List Files", {"dir_path": "."}),
    ("Write File", {"file_name": "hello.py", "content": "print('hi from a person')\n"}),
    ("Execute Script", {"script_name": "hello.py"}),
    ("Final Answer", {"final_answer": "said hi"}),
]


def open_human(task, tmp_path, budgets: Budgets | None = None) -> HumanRun:
    begun = session.start(task, ActorConfig(kind="human"), budgets, tmp_path / "runs", sandbox="local")
    return HumanRun(begun.run, begun.task, begun.actor)


def test_a_person_s_episode_is_recorded_like_a_replay_of_the_same_actions(tiny_task, tmp_path):
    human = open_human(tiny_task, tmp_path / "h")
    assert human.run.meta.status == "running" and "Final Answer" in human.actions
    observations = [human.step(action, args) for action, args in ACTIONS]
    assert "hi from a person" in observations[2].text and observations[-1].done
    assert human.ended  # the Final Answer ended the run: drive said so, not the session
    meta = RunDir.open(human.run.path).meta
    assert (meta.status, meta.status_reason, meta.final_answer) == ("finished", "final answer", "said hi")
    assert meta.totals.steps == 4 and meta.totals.seconds > 0 and meta.actor == "human"
    with pytest.raises(RunOver, match="finished"):
        human.step("List Files", {"dir_path": "."})

    replay = ReplayActor([Proposal(action=a, args=args) for a, args in ACTIONS])
    run, spec = create_run(tiny_task, replay, tmp_path / "r" / "runs", sandbox="local")
    drive(run, spec, replay)

    def trace(path):
        return [(s.action, s.args, s.observation, s.changed, s.error) for s in RunDir.open(path).steps()]

    assert trace(human.run.path) == trace(run.path)
    assert {s.actor for s in RunDir.open(human.run.path).steps()} == {"human"}


def test_budgets_end_a_person_s_run_and_later_steps_are_refused(tiny_task, tmp_path):
    human = open_human(tiny_task, tmp_path, Budgets(max_steps=2))
    human.step("List Files", {"dir_path": "."})
    assert not human.ended
    human.step("List Files", {"dir_path": "."})
    assert human.ended  # step() returns once drive has recorded the ending too
    meta = RunDir.open(human.run.path).meta
    assert meta.status == "max_steps" and meta.totals.steps == 2
    with pytest.raises(RunOver, match="max_steps"):
        human.step("Final Answer", {"final_answer": "too late"})
    assert len(RunDir.open(human.run.path).steps()) == 2


def test_closing_ends_the_run_interrupted_and_it_resumes_where_it_stopped(tiny_task, tmp_path):
    human = open_human(tiny_task, tmp_path)
    human.step("Write File", {"file_name": "notes.txt", "content": "kept\n"})
    human.close()
    human.close()  # a second close (a screen unmounting after the app closed it) is harmless
    meta = RunDir.open(human.run.path).meta
    assert (meta.status, meta.status_reason) == ("interrupted", "closed by the user")
    assert meta.totals.seconds > 0

    run = RunDir.open(human.run.path)
    (run.workspace / "stray.txt").write_text("written after the last step")
    again = HumanRun(run, run.task())  # resume: drive restores the last snapshot
    assert not (run.workspace / "stray.txt").exists()
    assert (run.workspace / "notes.txt").read_text() == "kept\n"
    again.step("Final Answer", {"final_answer": "done"})
    steps = RunDir.open(run.path).steps()
    assert [s.index for s in steps] == [1, 2] and RunDir.open(run.path).meta.status == "finished"


def test_a_finished_run_cannot_be_reopened_by_hand(tiny_task, tmp_path):
    human = open_human(tiny_task, tmp_path)
    human.step("Final Answer", {"final_answer": "done"})
    run = RunDir.open(human.run.path)
    with pytest.raises(RunOver, match="ended"):
        HumanRun(run, run.task())
    assert RunDir.open(run.path).meta.status == "finished"


def test_a_run_that_cannot_start_raises_to_the_opener_and_is_recorded(tiny_task, tmp_path, monkeypatch):
    run, spec = create_run(tiny_task, HumanActor(), tmp_path / "runs", sandbox="local", agent="human")

    def no_sandbox(*args, **kw):
        raise OSError("no sandbox today")

    monkeypatch.setattr("agent.runner.environment_for_run", no_sandbox)
    with pytest.raises(OSError, match="no sandbox today"):  # the real cause, not a generic one
        HumanRun(run, spec)
    meta = RunDir.open(run.path).meta
    assert meta.status == "error" and "no sandbox today" in meta.status_reason


def test_a_host_error_in_a_step_ends_the_run_as_error_and_the_person_is_told_why(
        tiny_task, tmp_path, monkeypatch):
    from environments.acting.environment import Environment

    real_step = Environment.step

    def step(self, action, args, **kw):
        if action == "Execute Script":
            raise RuntimeError("the disk went away")
        return real_step(self, action, args, **kw)

    monkeypatch.setattr(Environment, "step", step)
    human = open_human(tiny_task, tmp_path)
    human.step("List Files", {"dir_path": "."})
    with pytest.raises(RunOver, match="host error") as caught:
        human.step("Execute Script", {"script_name": "train.py"})
    assert isinstance(caught.value.__cause__, RuntimeError)
    meta = RunDir.open(human.run.path).meta
    assert meta.status == "error" and "the disk went away" in meta.status_reason
    assert [s.action for s in RunDir.open(human.run.path).steps()] == ["List Files"]


def test_stop_releases_a_waiting_propose_and_end_releases_a_waiting_act():
    actor = HumanActor()
    raised = []

    def drive_side():
        try:
            actor.propose(None)  # type: ignore[arg-type]
        except StoppedWhileWaiting:
            raised.append("stopped")

    thread = threading.Thread(target=drive_side)
    thread.start()
    actor.stop()
    thread.join(10)
    assert raised == ["stopped"] and not thread.is_alive()

    waiting = HumanActor()
    errors = []

    def person_side():
        try:
            waiting.act("List Files", {"dir_path": "."})
        except RunOver as err:
            errors.append(str(err))

    thread = threading.Thread(target=person_side)
    thread.start()
    waiting.end("error: host error")
    thread.join(10)
    assert not thread.is_alive() and errors == ["the run has ended (error: host error)"]
