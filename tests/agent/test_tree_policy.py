"""The solution tree's pure parts: the journal, AIDE's greedy policy, reading replies and
outcomes, and the look-ahead at the runner's budgets."""

from __future__ import annotations

import pytest

from agent.tree.nodes import Journal, Node
from agent.tree.outcome import Cost, fits, settle
from agent.tree.policy import GreedyPolicy, PolicySettings
from agent.tree.prompts import NoCode, build_messages, memory, parse_reply
from environments.record.runs import RunMeta


def node(i, kind="draft", parent=None, status="good", metric=None, code="print(1)\n"):
    return Node(id=i, parent=parent, kind=kind, code=code, status=status, metric=metric)


def journal(*nodes, higher=True):
    j = Journal(higher_is_better=higher)
    for n in nodes:
        j.add(n)
    return j


def policy(**kw):
    return GreedyPolicy(PolicySettings(**kw), seed=0)


# ---- the journal --------------------------------------------------------------------------------

def test_a_node_needs_an_existing_parent_and_a_new_id():
    j = journal(node(1))
    with pytest.raises(KeyError):
        j.add(node(2, "improve", parent=7))
    with pytest.raises(ValueError):
        j.add(node(1))
    assert j.next_id() == 2


def test_debug_depth_counts_debug_nodes_in_a_row():
    j = journal(node(1, status="buggy"), node(2, "debug", 1, "buggy"), node(3, "debug", 2, "good", 0.5),
                node(4, "improve", 3, "buggy"), node(5, "debug", 4, "buggy"))
    assert [j.debug_depth(i) for i in range(1, 6)] == [0, 1, 2, 0, 1]


def test_best_follows_the_direction_and_prefers_the_earliest_of_equals():
    nodes = [node(1, metric=0.5), node(2, metric=0.9), node(3, metric=0.9), node(4, status="buggy")]
    assert journal(*nodes).best().id == 2
    assert journal(*nodes, higher=False).best().id == 1
    assert journal(node(1, status="buggy")).best() is None


# ---- the policy ---------------------------------------------------------------------------------

def test_drafts_until_the_quota_is_met():
    p, j = policy(num_drafts=3, debug_prob=1.0), journal(node(1, status="buggy"), node(2, metric=0.4))
    op = p.next(j)
    assert (op.kind, op.parent) == ("draft", None)
    j.add(node(3, metric=0.6))
    assert p.next(j).kind != "draft"


def test_debugs_a_buggy_leaf_when_the_draw_says_so():
    j = journal(node(1, status="buggy"), node(2, metric=0.4))
    op = policy(num_drafts=2, debug_prob=1.0).next(j)
    assert (op.kind, op.parent) == ("debug", 1)


def test_improves_the_best_when_not_debugging():
    j = journal(node(1, status="buggy"), node(2, metric=0.4), node(3, metric=0.8), node(4, metric=0.6))
    op = policy(num_drafts=3, debug_prob=0.0).next(j)
    assert (op.kind, op.parent) == ("improve", 3)
    j_low = journal(node(1, metric=0.4), node(2, metric=0.8), higher=False)
    assert policy(num_drafts=2, debug_prob=0.0).next(j_low).parent == 1


def test_a_buggy_node_already_debugged_is_not_debugged_again():
    j = journal(node(1, status="buggy"), node(2, metric=0.4), node(3, "debug", 1, "good", 0.5))
    op = policy(num_drafts=2, debug_prob=1.0).next(j)
    assert (op.kind, op.parent) == ("improve", 3)


def test_a_line_of_fixes_stops_at_the_debug_depth():
    j = journal(node(1, status="buggy"), node(2, "debug", 1, "buggy"), node(3, "debug", 2, "buggy"))
    assert policy(num_drafts=1, debug_prob=1.0, max_debug_depth=3).next(j).parent == 3
    op = policy(num_drafts=1, debug_prob=1.0, max_debug_depth=2).next(j)
    assert (op.kind, op.parent) == ("draft", None)  # nothing good to improve either


def test_with_no_good_node_it_drafts_again():
    j = journal(node(1, status="buggy"), node(2, "debug", 1, "buggy"))
    op = policy(num_drafts=1, debug_prob=0.0).next(j)
    assert (op.kind, op.parent) == ("draft", None)


def test_the_seed_fixes_the_choices_and_the_probability_mixes_them():
    j = journal(node(1, status="buggy"), node(2, metric=0.4))

    def choices(seed):
        p = GreedyPolicy(PolicySettings(num_drafts=2, debug_prob=0.5), seed=seed)
        return [p.next(j).kind for _ in range(40)]

    assert choices(3) == choices(3)
    assert set(choices(3)) == {"debug", "improve"}
    assert choices(3) != choices(4)


# ---- prompts and replies ------------------------------------------------------------------------

def test_the_longest_python_block_is_the_script_and_the_text_before_is_the_plan():
    text = ("Plan: scale the inputs.\n\n```bash\npip install nothing-at-all-here\n```\n"
            "```python\nx = 1\nprint('validation accuracy', x)\n```\nand\n```\ny = 2\n```")
    plan, code = parse_reply(text)
    assert plan == "Plan: scale the inputs."
    assert code == "x = 1\nprint('validation accuracy', x)\n"


def test_an_unclosed_fence_and_bare_python_still_give_a_script():
    assert parse_reply("Do it.\n```python\nprint(3)\n")[1] == "print(3)\n"
    assert parse_reply("import os\nprint(os.sep)") == ("", "import os\nprint(os.sep)\n")
    with pytest.raises(NoCode):
        parse_reply("I would standardise the pixels and train longer.")
    with pytest.raises(NoCode):
        parse_reply("```python\n\n```")


def test_prompts_carry_the_parent_and_the_memory():
    j = journal(Node(id=1, kind="draft", code="boom()\n", plan="first try", status="buggy",
                     error="Traceback\nNameError: name 'boom' is not defined"),
                Node(id=2, kind="draft", code="ok()\n", plan="second", status="good", metric=0.75,
                     output="validation accuracy 0.75"))
    common = {"problem": "Classify digits.", "script": "train.py", "starting_code": "start()\n",
              "journal": j, "metric": "accuracy", "higher_is_better": True, "timeout": 300,
              "budget": "9 of 10 steps"}
    debug = build_messages(kind="debug", parent=j.get(1), **common)
    text = debug[1]["content"]
    assert "boom()" in text and "NameError" in text and "start()" in text and "9 of 10 steps" in text
    assert "node 1 (draft): first try -> failed: NameError" in text
    assert "validation accuracy 0.75" in memory(j, "accuracy")
    assert "Classify digits." in debug[0]["content"]
    improve = build_messages(kind="improve", parent=j.get(2), **common)[1]["content"]
    assert "ok()" in improve and "node 2, validation accuracy 0.75" in improve
    with pytest.raises(ValueError):
        build_messages(kind="improve", parent=None, **common)


# ---- outcomes -----------------------------------------------------------------------------------

def test_the_validation_value_wins_over_the_scripts_print():
    n = node(1, status="pending")
    out = settle(n, failed=False, output="validation accuracy: 0.99", metric_name="accuracy",
                 validation={"value": 0.81, "failure": None})
    assert (out.status, out.metric, out.metric_source) == ("good", 0.81, "validation")


def test_a_failed_validation_is_a_bug_unless_the_infrastructure_failed():
    n = node(1, status="pending")
    bad = settle(n, failed=False, output="validation accuracy: 0.99", metric_name="accuracy",
                 validation={"value": None, "failure": "eval_error"})
    assert bad.status == "buggy" and "eval_error" in bad.error and bad.metric is None
    infra = settle(n, failed=False, output="validation accuracy: 0.99", metric_name="accuracy",
                   validation={"value": None, "failure": "infrastructure"})
    assert (infra.status, infra.metric, infra.metric_source) == ("good", 0.99, "output")


def test_a_run_without_a_metric_or_with_an_error_is_buggy():
    n = node(1, status="pending")
    silent = settle(n, failed=False, output="done", metric_name="accuracy")
    assert silent.status == "buggy" and "validation accuracy: <number>" in silent.error
    crashed = settle(n, failed=True, output="x" * 5000 + "ZeroDivisionError", metric_name="accuracy")
    assert crashed.status == "buggy" and crashed.error.endswith("ZeroDivisionError")
    assert len(crashed.error) == 2000


def meta(limits, steps=0, tokens=0, cost=0.0, seconds=0.0):
    m = RunMeta(run_id="r", task="t", task_root="/x", actor="agent", budgets=limits)
    m.totals.steps, m.totals.tokens_in, m.totals.cost, m.totals.seconds = steps, tokens, cost, seconds
    return m


def test_fits_looks_ahead_with_the_runners_budgets():
    node_cost, closing = Cost(steps=2, tokens=100, cost=0.01, seconds=5), Cost(steps=3, seconds=5)
    # steps: 4 taken + 2 + 3 = 9 steps, the Final Answer the 9th
    assert fits(meta({"max_steps": 9}, steps=4), node_cost, closing)
    assert not fits(meta({"max_steps": 8}, steps=4), node_cost, closing)
    assert fits(meta({"max_tokens": 1000}, tokens=899), node_cost, closing)
    assert not fits(meta({"max_tokens": 1000}, tokens=900), node_cost, closing)
    assert not fits(meta({"max_cost": 0.05}, cost=0.04), node_cost, closing)
    assert fits(meta({"max_time": 60}, seconds=49), node_cost, closing)
    assert not fits(meta({"max_time": 60}, seconds=50), node_cost, closing)
    assert fits(meta({}), node_cost, closing)
