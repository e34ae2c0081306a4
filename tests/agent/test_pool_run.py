"""One research pool run end to end (threads, the local sandbox, a task that runs in well
under a second), and what its records let anyone check: the nodes, the pick on select, the
ledger (``labcoat verify``), the report, a fork point, nothing left running."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agent import session
from agent.config import ActorConfig
from agent.pool.operators import Operation
from agent.pool.records import nodes_of, step_of_node
from agent.pool.settings import PoolSettings
from agent.pool.worker import NodeJob, run_node
from agent.tree.settings import TreeSettings
from environments.record import ledger
from environments.record.runs import Budgets, RunDir
from environments.reports.verify import verify_run
from environments.task.prepare import prepare_task
from environments.task.suite import resolve_task
from tests.agent.helpers import children
from tests.agent.pool_task import write_pool_task
from tui.cli.tree_report import load_tree_report

SLOW = pytest.mark.slow  # the rest reuse the one pool run (3 s quiet, 9 s at load 7)


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("pool")
    task = write_pool_task(root / "task")
    before = children(os.getpid())
    config = ActorConfig(kind="pool", pool=PoolSettings(workers=2, pool_executor="threads"),
                         tree=TreeSettings(select_top_k=3))
    begun = session.start(task, config, Budgets(max_steps=30), root / "runs", sandbox="local")
    meta = begun.drive()
    return begun.run, meta, children(os.getpid()) - before


def test_the_pool_runs_every_setting_and_picks_on_select(pool_run):
    """The fast set's one pool run (about 3 s on a quiet machine)."""
    run, meta, _ = pool_run
    assert meta.status == "finished", meta.status_reason
    steps = run.steps()
    nodes = {rec.id: rec for rec, _ in nodes_of(steps)}
    assert len(nodes) == 9 and len({json.dumps(n.setting, sort_keys=True) for n in nodes.values()}) == 9
    failed = [n for n in nodes.values() if n.status == "failed"]
    assert [n.setting for n in failed] == [{"A": 3, "B": 3}] and "fails on purpose" in failed[0].reason
    for n in nodes.values():
        assert n.worker.startswith("thread-") and n.started_at <= n.ended_at and n.cpu_seconds is not None
    assert nodes[1].operator == "start" and {n.operator for n in nodes.values()} >= {"draft", "improve"}
    best_search = max((n for n in nodes.values() if n.scored), key=lambda n: n.search)
    assert best_search.setting == {"A": 3, "B": 2}
    assert (run.workspace / "result.txt").read_text() == "7 2 31"  # A=3, B=1: best on select
    assert "Select chose it over node" in meta.final_answer
    selects = [s for s in steps if s.action == "Score Candidate"]
    assert len(selects) == 3 and all(s.data["split"] == "select" for s in selects)
    assert verify_run(run.path).ok, verify_run(run.path).problems


def rechained(entries: list[ledger.Entry]) -> str:
    """The ledger as a forger who rewrites every hash after a change would leave it."""
    out, prev = [], ledger.GENESIS
    for seq, e in enumerate(entries):
        e = e.model_copy(update={"seq": seq, "prev": prev})
        e = e.model_copy(update={"hash": ledger.digest(e)})
        out.append(e.model_dump_json())
        prev = e.hash
    return "\n".join(out) + "\n"


@SLOW
def test_the_ledger_matches_the_nodes_and_tampering_shows(pool_run, tmp_path):
    run, _, _ = pool_run
    assert verify_run(run.path).ok, verify_run(run.path).problems
    entries = ledger.read(run.path)
    node4 = next(e for e in entries if e.node == 4 and e.step is None)

    def tampered(name: str) -> Path:
        return Path(shutil.copytree(run.path, tmp_path / name, symlinks=True))

    dropped = tampered("dropped")  # node 4's line gone, the chain rewritten to hide it
    (dropped / ledger.LEDGER).write_text(rechained([e for e in entries if e is not node4]))
    verdict = verify_run(dropped)
    assert verdict.ledger_intact and not verdict.ok
    assert any("Record Node 4" in p and "no ledger line" in p for p in verdict.problems), verdict.problems

    added = tampered("added")  # a node the trace never recorded
    (added / ledger.LEDGER).write_text(rechained([*entries, node4.model_copy(update={"node": 99})]))
    verdict = verify_run(added)
    assert verdict.ledger_intact and any("pool node 99" in p for p in verdict.problems), verdict.problems

    edited = tampered("edited")  # the trace says a node scored other than the harness saw
    trace = [json.loads(line) for line in (edited / "trace.jsonl").read_text().splitlines()]
    k = next(i for i, st in enumerate(trace) if st["action"] == "Record Node" and st["data"].get("value") == 8.0)
    trace[k]["data"]["value"] = 9.0
    (edited / "trace.jsonl").write_text("".join(json.dumps(st) + "\n" for st in trace))
    verdict = verify_run(edited)
    assert not verdict.ok and any("Record Node" in p for p in verdict.problems), verdict.problems


@SLOW
def test_the_report_and_the_fork_point_name_each_node(pool_run, tmp_path):
    run, _, _ = pool_run
    report = load_tree_report(run.path)
    assert report.kind == "pool" and len(report.nodes) == 9
    chosen = next(r for r in report.nodes if r.best)
    assert chosen.setting == {"A": 3, "B": 1} and chosen.select == 2.0 and chosen.worker
    assert len(report.curve) == 9 and report.curve[-1].best_search == 8.0  # 2*3 + 2
    assert [p.cpu_seconds for p in report.curve] == sorted(p.cpu_seconds for p in report.curve)
    at = step_of_node(run.steps(), chosen.node)
    assert at == chosen.step
    RunDir.open(run.path).restore(at, tmp_path / "ws")
    assert (tmp_path / "ws" / "result.txt").read_text() == "7 2 31"
    with pytest.raises(ValueError, match="no pool node 99"):
        step_of_node(run.steps(), 99)


@SLOW
def test_nothing_is_left_running_and_test_is_read_once_by_scoring(pool_run):
    run, _, left = pool_run
    assert left == set()
    [score] = session.score(run, sandbox="local")
    assert score.value == 31.0
    verdict = verify_run(run.path)
    assert verdict.ok and verdict.test_seen_by_agent is False and verdict.calls["test"]["agent"] == 0


def test_a_node_whose_sandbox_cannot_open_fails_with_the_reason(tmp_path):
    task = prepare_task(resolve_task(write_pool_task(tmp_path / "task")), sandbox="local")
    start = tmp_path / "start"
    shutil.copytree(task.env_dir, start)
    op = Operation("start", [], {}, {})
    rec = run_node(NodeJob(run_path=str(tmp_path / "run"), task=task, sandbox="no-such-backend",
                           node=1, op=op, knobs=[], source=str(start)))
    assert rec.status == "failed" and "its sandbox could not be opened" in rec.reason
    assert rec.search is None and rec.failure is None  # nothing was scored: no ledger line
