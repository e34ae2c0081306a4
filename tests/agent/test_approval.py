"""Approval policies, headless: a rule and a person (from another thread) approve, edit or
reject a real research agent's proposals, and the trace keeps what they decided."""

from __future__ import annotations

import json
import queue
import threading

from agent.actor import Proposal
from agent.approval import REJECTED, ApprovingActor, Decision, PersonReview
from agent.factory import make_actor
from agent.runner import Budgets, create_run, drive
from environments.record.runs import RunDir
from tests.agent.helpers import react, write_replies


class RuleReview:
    """A policy by rule: no scripts run, and listings look at the workspace root only."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def review(self, proposal: Proposal) -> Decision | None:
        self.seen.append(proposal.action)
        if proposal.action == "Execute Script":
            return Decision.reject("no scripts in this review")
        if proposal.action == "List Files":
            return Decision.edit({"dir_path": "."})
        return Decision.approve()


def scripted_agent(tmp_path, task, replies: list[str], policy):
    model = write_replies(tmp_path / "replies.txt", replies)
    inner = make_actor(model=model)
    actor = ApprovingActor(inner, policy)
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model=model,
                           budgets=Budgets(max_steps=10))
    return run, spec, actor


def test_a_rule_edits_and_rejects_and_the_trace_and_the_agent_both_know(tiny_task, tmp_path):
    replies = [
        react("List Files", {"dir_path": "nowhere"}),
        react("Execute Script", {"script_name": "train.py"}),
        react("Final Answer", {"final_answer": "ok"}),
    ]
    policy = RuleReview()
    run, spec, actor = scripted_agent(tmp_path, tiny_task, replies, policy)
    meta = drive(run, spec, actor)
    assert meta.status == "finished" and policy.seen == ["List Files", "Execute Script", "Final Answer"]
    listing, answer = RunDir.open(run.path).steps()  # the rejected action made no step
    assert listing.args == {"dir_path": "."} and listing.meta["edited_by_human"]
    assert listing.meta["proposed_args"] == {"dir_path": "nowhere"} and "train.py" in listing.observation
    assert answer.action == "Final Answer"
    assert answer.meta["rejected"] == [{"action": "Execute Script", "args": {"script_name": "train.py"},
                                        "reason": "no scripts in this review"}]
    assert not (run.workspace / "result.txt").exists()  # the script never ran
    prompts = [json.dumps(json.loads(line)) for line in (run.path / "llm" / "calls.jsonl").open()]
    assert any(REJECTED in p and "no scripts in this review" in p for p in prompts[2:])


def test_a_person_answers_from_another_thread_and_stopping_while_one_waits_interrupts(tiny_task, tmp_path):
    replies = [react("List Files", {"dir_path": "."}), react("Final Answer", {"final_answer": "ok"})]
    shown: queue.Queue[Proposal] = queue.Queue()
    review = PersonReview(notify=shown.put)
    run, spec, actor = scripted_agent(tmp_path, tiny_task, replies, review)
    worker = threading.Thread(target=drive, args=(run, spec, actor))
    worker.start()
    first = shown.get(timeout=60)
    assert first.action == "List Files" and review.pending == first
    review.decide(Decision.approve())
    second = shown.get(timeout=60)
    assert second.action == "Final Answer"
    review.stop()  # the person walks away while the Final Answer waits
    worker.join(60)
    assert not worker.is_alive()
    meta = RunDir.open(run.path).meta
    assert meta.status == "interrupted"
    assert [s.action for s in RunDir.open(run.path).steps()] == ["List Files"]
    assert review.pending is None
    assert review.review(second) is None  # once stopped, every later proposal is refused too


def test_a_decision_without_a_waiting_proposal_is_dropped():
    review = PersonReview()
    review.decide(Decision.approve())  # nothing waits: nothing to answer, nothing kept
    answers: list[Decision | None] = []
    proposal = Proposal(action="List Files", args={"dir_path": "."})
    waiter = threading.Thread(target=lambda: answers.append(review.review(proposal)))
    waiter.start()
    while review.pending is None:
        threading.Event().wait(0.01)
    review.decide(Decision.reject("not now"))
    waiter.join(10)
    assert answers == [Decision(accept=False, reason="not now")]
