"""The research pool's pure parts: parent selection, the baseline operators, node records,
and what ``labcoat run --agent pool`` refuses before a run exists. (One end-to-end pool run:
``test_pool_run.py``; Ray and a two-node cluster: ``test_pool_ray.py``, slow.)"""

from __future__ import annotations

import random
import socket

import pytest

from agent.baseline import Knob
from agent.config import OptionError, build
from agent.pool.checks import check_pool
from agent.pool.operators import (
    Operation,
    apply_setting,
    crossover,
    debug,
    improve,
    key,
    next_operation,
)
from agent.pool.records import NodeRecord, nodes_of
from agent.pool.selection import pick, rank_weights, ranked
from agent.pool.settings import PoolSettings
from environments.acting.pool_node import RECORD_NODE
from environments.record.runs import Step
from tests.agent.pool_task import write_pool_task

KNOBS = [Knob("train.py", "A", 1, [2, 3]), Knob("train.py", "B", 1, [2, 3])]


def node(id: int, a: int, b: int, search: float | None = None, status: str = "ok",
         parents: list[int] | None = None, operator: str = "draft") -> NodeRecord:
    return NodeRecord(id=id, parents=parents or [], operator=operator, setting={"A": a, "B": b},
                      changes={"A": [1, a]} if a != 1 else {}, status=status, search=search)


# ---- selection ---------------------------------------------------------------------------------

def test_rank_weights_follow_rank_not_scale_and_sum_to_one():
    w = rank_weights([0.5, 100.0, 0.6], higher_is_better=True, temperature=1.0)
    assert abs(sum(w) - 1) < 1e-9
    assert w[1] > w[2] > w[0]
    assert rank_weights([0.5, 0.51, 0.6], True, 1.0) == pytest.approx(
        rank_weights([0.5, 90, 1e6], True, 1.0))  # the ranks alone count
    low = rank_weights([3.0, 1.0, 2.0], higher_is_better=False, temperature=1.0)
    assert low[1] > low[2] > low[0]
    assert ranked([3.0, 1.0, 2.0], False) == [1, 2, 0]


def test_temperature_moves_from_greedy_to_uniform():
    scores = [1.0, 2.0, 3.0, 4.0]
    assert rank_weights(scores, True, 0.01)[3] > 0.999
    assert max(rank_weights(scores, True, 1000.0)) - min(rank_weights(scores, True, 1000.0)) < 0.01
    assert pick(scores, True, random.Random(0), greedy=True) == 3
    assert pick([2.0, 2.0], True, random.Random(0), greedy=True) == 0  # ties: the earliest
    with pytest.raises(ValueError):
        pick([], True, random.Random(0))
    draws = [pick(scores, True, random.Random(i), temperature=1.0) for i in range(400)]
    assert draws.count(3) > draws.count(2) > draws.count(0)


# ---- operators ---------------------------------------------------------------------------------

def test_the_first_node_is_the_start_then_drafts():
    rng = random.Random(0)
    first = next_operation(KNOBS, [], [], rng, higher_is_better=True)
    assert (first.operator, first.setting, first.parents) == ("start", {"A": 1, "B": 1}, [])
    second = next_operation(KNOBS, [], [first], rng, higher_is_better=True, drafts=3)
    assert second.operator == "draft" and key(second.setting) != key(first.setting)


def test_improve_changes_one_knob_of_its_parent():
    parent = node(4, 2, 2, 4.0)
    for seed in range(20):
        op = improve(KNOBS, parent, random.Random(seed))
        assert op.parents == [4] and op.base == parent.setting
        assert len(op.changes) == 1 and sum(op.setting[k] != parent.setting[k] for k in "AB") == 1


def test_crossover_takes_each_knob_from_one_parent_and_is_neither():
    a, b = node(1, 1, 3, 4.0), node(2, 3, 1, 4.0)
    seen = set()
    for seed in range(30):
        op = crossover(KNOBS, a, b, random.Random(seed))
        assert op.parents == [1, 2] and op.base == a.setting
        assert op.setting["A"] in (1, 3) and op.setting["B"] in (3, 1)
        seen.add(key(op.setting))
    assert seen == {key({"A": 1, "B": 1}), key({"A": 3, "B": 3})}  # never a parent's own
    assert crossover(KNOBS, a, node(3, 1, 2, 1.0), random.Random(0)) is None  # one knob apart


def test_debug_retries_the_parent_with_another_value():
    parent = node(2, 2, 1, 3.0)
    failed = node(5, 3, 1, status="failed", parents=[2], operator="improve")
    failed = failed.model_copy(update={"changes": {"A": [2, 3]}})
    op = debug(KNOBS, failed, parent, random.Random(0))
    assert op.operator == "debug" and op.of == 5 and op.parents == [2]
    assert op.setting == {"A": 1, "B": 1}  # neither the failed 3 nor the parent's 2
    assert debug(KNOBS, failed, None, random.Random(0)) is None


def test_next_operation_never_repeats_a_setting_and_ends_when_none_is_left():
    rng = random.Random(1)
    nodes: list[NodeRecord] = []
    pending: list[Operation] = []
    for i in range(1, 10):
        op = next_operation(KNOBS, nodes, pending, rng, higher_is_better=True, drafts=2)
        assert op is not None
        assert key(op.setting) not in {key(n.setting) for n in nodes}
        nodes.append(NodeRecord(id=i, parents=op.parents, operator=op.operator, of=op.of,
                                setting=op.setting, changes=op.changes,
                                search=float(op.setting["A"] + op.setting["B"])))
    assert next_operation(KNOBS, nodes, pending, rng, higher_is_better=True) is None  # 3 x 3 tried
    assert {n.operator for n in nodes} >= {"start", "draft", "improve"}


def test_greedy_improves_the_best():
    nodes = [node(1, 1, 1, 2.0, operator="start"), node(2, 2, 1, 3.0), node(3, 1, 2, 1.0),
             node(4, 2, 2, 0.5)]
    for seed in range(10):
        op = next_operation(KNOBS, nodes, [], random.Random(seed), higher_is_better=True,
                            drafts=1, greedy=True)
        assert op.parents[0] == 2 or op.operator == "crossover" and 2 in op.parents


def test_apply_setting_writes_the_values(tmp_path):
    (tmp_path / "train.py").write_text("A = 1\nB = 1\nprint(A + B)\n")
    changed = apply_setting(tmp_path, KNOBS, {"A": 1, "B": 1}, {"A": 3, "B": 1})
    assert changed == ["train.py"]
    assert (tmp_path / "train.py").read_text() == "A = 3\nB = 1\nprint(A + B)\n"


# ---- records -----------------------------------------------------------------------------------

def test_the_trace_is_the_population():
    rec = node(3, 2, 1, 3.0)
    steps = [Step(index=1, actor="agent", action="Execute Script", observation=""),
             Step(index=2, actor="agent", action=RECORD_NODE, observation="",
                  data={"node": 3, "record": rec.model_dump()}),
             Step(index=3, actor="agent", action=RECORD_NODE, observation="", data={"record": {"id": 0}})]
    assert nodes_of(steps) == [(rec, 2)]


# ---- refused before a run exists ---------------------------------------------------------------

def test_workers_zero_is_refused_by_its_flag():
    with pytest.raises(OptionError, match="--workers"):
        build({"kind": "pool", "workers": 0})


def test_a_task_without_a_search_split_is_refused_by_name(tmp_path):
    task = write_pool_task(tmp_path / "t", splits=False)
    with pytest.raises(ValueError, match=r"\[splits\.search\]"):
        check_pool(PoolSettings(), task)
    check_pool(PoolSettings(), write_pool_task(tmp_path / "u"))


def test_a_ray_address_that_does_not_answer_is_refused_quickly(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: nothing answers
        with pytest.raises(ValueError, match=f"no Ray cluster answers at 127.0.0.1:{port}"):
            check_pool(PoolSettings(address=f"127.0.0.1:{port}"), write_pool_task(tmp_path / "t"))
    with pytest.raises(ValueError, match="host:port"):
        check_pool(PoolSettings(address="nowhere"), write_pool_task(tmp_path / "u"))


def test_views_draw_a_pool_run_and_score_a_cut_one_on_its_chosen_node():
    from agent.tree.view import has_tree, result_step, tree_of

    def rec_step(index: int, rec: NodeRecord) -> Step:
        return Step(index=index, actor="agent", action=RECORD_NODE, observation="",
                    data={"node": rec.id, "record": rec.model_dump(), "laid": True,
                          "split": "search", "value": rec.search})

    steps = [rec_step(1, node(1, 1, 1, 2.0, operator="start")), rec_step(2, node(2, 3, 1, 4.0)),
             rec_step(3, node(3, 2, 2, 3.0)),
             Step(index=4, actor="agent", action="Score Candidate", observation="",
                  data={"split": "select", "node": 2, "value": 1.0}),
             Step(index=5, actor="agent", action="Score Candidate", observation="",
                  data={"split": "select", "node": 3, "value": 5.0})]
    assert has_tree(steps)
    tree = tree_of(steps, "total", True)
    assert [n.id for n in tree.journal.nodes] == [1, 2, 3] and tree.best == 3  # select chose 3
    assert result_step(steps, "total", True) is None  # the workspace is node 3's already
    assert result_step(steps[:2], "total", True) is None
    steps.append(rec_step(6, node(4, 1, 3, 0.5)))  # cut short on a worse node
    assert result_step(steps, "total", True) == 3


def test_without_hparams_the_knobs_are_found_as_the_baseline_finds_them(tmp_path):
    from agent.pool.operators import knobs_of
    from environments.task.suite import resolve_task

    task = resolve_task(write_pool_task(tmp_path / "t"))
    task = task.model_copy(update={"hparams": []})
    source = "LR = 0.01\nSEED = 0\nmodel = Model(n_estimators=50, random_state=SEED)\n"
    knobs, notes = knobs_of(task, lambda f: source)
    assert [k.name for k in knobs] == ["LR", "n_estimators"] and not notes
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "train.py").write_text(source)
    apply_setting(folder, knobs, {"LR": 0.01, "n_estimators": 50}, {"LR": 0.1, "n_estimators": 200})
    assert (folder / "train.py").read_text() == source.replace("0.01", "0.1").replace("50", "200")
    assert knobs_of(task, lambda f: "print(1)\n") == ([], [
        "no [[hparams]] in task.toml and no numeric constants or hyperparameter keywords in its "
        "solve scripts: only the starting setting is run"])


def test_a_search_crosses_over_nodes_two_knobs_apart_and_finds_the_best():
    knobs = [Knob("t.py", "E", 12, [6, 30, 60]), Knob("t.py", "L", 0.01, [0.001, 0.003, 0.03]),
             Knob("t.py", "H", 48, [16, 128, 256])]

    def score(s: dict) -> float:
        return -abs(s["E"] - 30) / 30 - abs(s["L"] - 0.01) * 10 - abs(s["H"] - 128) / 128

    rng, nodes = random.Random(0), []
    for i in range(1, 41):
        op = next_operation(knobs, nodes, [], rng, higher_is_better=True)
        nodes.append(NodeRecord(id=i, parents=op.parents, operator=op.operator, of=op.of,
                                setting=op.setting, changes=op.changes, search=score(op.setting)))
    crosses = [n for n in nodes if n.operator == "crossover"]
    assert crosses and all(len(n.parents) == 2 for n in crosses)
    assert max(n.search for n in nodes) == 0.0  # E=30, L=0.01, H=128
