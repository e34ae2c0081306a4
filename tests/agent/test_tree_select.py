"""The tree agent under hidden consistent evaluation: every node scored by the harness on the
hidden search split (no budget), the final node picked on select among the best on search, test
read once, by scoring, after the run; each read a line of the run's ledger."""

from __future__ import annotations

from agent.models import make_model
from agent.runner import create_run, drive
from agent.tree.agent import TreeAgent, TreeSettings, rebuild
from agent.tree.nodes import Journal
from agent.tree.policy import PolicySettings
from environments.record import ledger
from environments.record.runs import Budgets, RunDir
from environments.reports.verify import verify_run
from environments.scoring.score import score_run
from tests.agent.helpers import write_replies
from tests.split_task import write_split_task, writes


def reply(plan: str, code: str) -> str:
    return f"{plan}\n\n```python\n{code.rstrip()}\n```"


def test_select_picks_another_node_than_search_and_the_ledger_records_it(tmp_path):
    task = write_split_task(tmp_path / "splits")
    # node 1 is best on search but overfits it: worse on select (and test) than node 2
    codes = [writes(30, 10, 11), writes(25, 28, 27), writes(10, 5, 6)]
    model = write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in enumerate(codes, 1)])
    actor = TreeAgent(make_model(model), TreeSettings(policy=PolicySettings(num_drafts=3)))
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model=model,
                           budgets=Budgets(max_steps=14))
    meta = drive(run, spec, actor)
    assert meta.status == "finished", meta.status_reason

    j = actor.journal
    assert [(n.metric, n.metric_source) for n in j.nodes] == [
        (30.0, "search"), (25.0, "search"), (10.0, "search")]
    assert j.best().id == 1 and j.chosen().id == 2
    assert [n.select for n in j.nodes] == [10.0, 28.0, 5.0]
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == (["Write File", "Execute Script", "Score Candidate"] * 3
                                         + ["Score Candidate"] * 3
                                         + ["Restore Workspace", "Final Answer"])
    assert "Validate Submission" not in [s.action for s in steps]  # no budget spent
    assert (run.workspace / "train.py").read_text() == codes[1]
    assert "node 1 was best on search" in meta.final_answer

    # test is read once, after the run, for the chosen node
    assert score_run(run, spec, sandbox="local").value == 27.0
    calls = [e for e in ledger.read(run.path) if e.event == "call"]
    assert [(e.actor, e.split, e.purpose, e.node, e.shown_to_agent, e.revealed.value)
            for e in calls] == [
        ("harness", "search", "search", 1, True, 30.0),
        ("harness", "search", "search", 2, True, 25.0),
        ("harness", "search", "search", 3, True, 10.0),
        ("harness", "select", "select", 1, False, 10.0),
        ("harness", "select", "select", 2, False, 28.0),
        ("harness", "select", "select", 3, False, 5.0),
        ("harness", "test", "final", None, False, 27.0)]
    assert [e.step for e in calls[:6]] == [3, 6, 9, 10, 11, 12]
    assert ledger.check_chain(ledger.read_lines(run.path)) == []
    verdict = verify_run(run.path)
    assert verdict.ok and not verdict.test_seen_by_agent, verdict.problems

    # a resume rebuilds the same pick from the trace alone
    again, _ = rebuild(steps, Journal(), "total")
    assert again.chosen().id == 2 and [n.select for n in again.nodes] == [10.0, 28.0, 5.0]


def test_a_score_candidate_on_test_is_refused_before_it_runs(tmp_path):
    task = write_split_task(tmp_path / "splits")
    model = write_replies(tmp_path / "r.txt", [reply("one", writes(1, 2, 3))])
    actor = TreeAgent(make_model(model), TreeSettings(policy=PolicySettings(num_drafts=1)))
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model=model,
                           budgets=Budgets(max_steps=6))
    from environments.acting.environment import environment_for_run

    env = environment_for_run(run, spec, extra_actions=actor.extra_actions())
    try:
        obs = env.step("Score Candidate", {"split": "test"})
    finally:
        env.sandbox.close()
    assert obs.error and "split" in obs.text.lower()
    assert not [e for e in ledger.read(run.path) if e.event == "call"]  # nothing was read
