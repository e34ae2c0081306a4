"""Human mode (mini-swe-agent's third confirm mode), headless: the person takes over an agent
run, acts by hand while the model is not asked, and hands back; each step records who acted,
and a proposal made meanwhile is not run and is told to the agent as rejected."""

from __future__ import annotations

import json
import queue
import threading

from agent.actor import Proposal
from agent.approval import REJECTED, TOOK_OVER, PersonReview, ReviewSettings
from agent.runner import drive
from environments.record.runs import RunDir
from tests.agent.helpers import react
from tests.agent.test_approval import scripted_agent


def test_the_person_takes_over_acts_by_hand_and_hands_back(tiny_task, tmp_path):
    replies = [react("List Files", {"dir_path": "."}),
               react("Inspect Script Lines", {"script_name": "train.py", "start_line_number": 1,
                                              "end_line_number": 1}),
               react("Final Answer", {"final_answer": "ok"})]
    shown: queue.Queue[Proposal] = queue.Queue()
    turns: queue.Queue[bool] = queue.Queue()
    review = PersonReview(notify=shown.put, settings=ReviewSettings(mode="confirm"),
                          on_turn=lambda: turns.put(True))
    run, spec, actor = scripted_agent(tmp_path, tiny_task, replies, review)
    worker = threading.Thread(target=drive, args=(run, spec, actor), daemon=True)
    worker.start()
    assert shown.get(timeout=60).action == "List Files"
    review.set_mode("human")  # the waiting proposal is answered: not run, the person acts
    assert turns.get(timeout=60)
    hands = review.hands
    seen = hands.act("Write File", {"file_name": "result.txt", "content": "7"})
    assert not seen.error and len(run.steps()) == 1  # recorded before act returns
    assert not hands.act("List Files", {"dir_path": "."}).error
    calls_before = len((run.path / "llm" / "calls.jsonl").read_text().splitlines())
    assert calls_before == 1  # the model was not asked while the person acted
    review.set_mode("yolo")  # handed back: the agent is asked again, and nothing waits
    worker.join(60)
    assert shown.empty()  # yolo ran the inspection and the Final Answer unasked
    assert RunDir.open(run.path).meta.status == "finished"
    steps = RunDir.open(run.path).steps()
    assert [(s.actor, s.action) for s in steps] == [
        ("human", "Write File"), ("human", "List Files"), ("agent", "Inspect Script Lines"),
        ("agent", "Final Answer")]
    assert steps[0].meta["rejected"] == [{"action": "List Files", "args": {"dir_path": "."},
                                          "reason": TOOK_OVER}]
    assert (run.workspace / "result.txt").read_text() == "7"
    prompts = [json.dumps(json.loads(line)) for line in (run.path / "llm" / "calls.jsonl").open()]
    assert REJECTED in prompts[1] and "the person took over" in prompts[1]
    assert not review.settings.ask_final  # yolo: a person who walked away finds it ended


def test_stopping_while_the_person_has_the_run_ends_it_interrupted(tiny_task, tmp_path):
    review = PersonReview(settings=ReviewSettings(mode="human"))
    turns: queue.Queue[bool] = queue.Queue()
    review.hands.on_wait = lambda: turns.put(True)
    run, spec, actor = scripted_agent(tmp_path, tiny_task, [react("List Files", {"dir_path": "."})], review)
    worker = threading.Thread(target=drive, args=(run, spec, actor), daemon=True)
    worker.start()
    assert turns.get(timeout=60)  # human mode from the start: the model is never asked
    review.stop()
    worker.join(60)
    assert RunDir.open(run.path).meta.status == "interrupted"
    assert not (run.path / "llm" / "calls.jsonl").exists() or \
        not (run.path / "llm" / "calls.jsonl").read_text().strip()
