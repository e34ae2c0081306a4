"""The research pool with a model (``--agent pool --model M``): the model, in the driver, writes
every node's script; episodes take a second turn to fix a failed script; a crossover shows both
parents; the tool operator shows a method tool's report; bad models fail nodes, not the run.

One shared run (threads, the local sandbox, a scripted model, a tiny test tool registered for
the run) is checked by the fast test and reused by the slow ones. It has one worker, so the
scripted replies reach the episodes in a known order."""

from __future__ import annotations

import json
import random
import textwrap

import pytest

from agent import pool_model, session
from agent.config import ActorConfig
from agent.pool.records import NodeRecord, nodes_of
from agent.pool.settings import PoolSettings
from agent.pool.tool_op import tool_args
from agent.pool_model import next_model_operation
from agent.tree import prompts
from agent.tree.nodes import Journal, Node
from agent.tree.settings import TreeSettings
from environments.record.runs import Budgets
from environments.reports.verify import verify_run
from methods.registry import all_tools
from methods.toolspec import ToolSpec
from tests.agent.pool_task import write_pool_task
from tests.agent.stub_llm import StubLLM, connect
from tui.cli.tree_report import load_tree_report

SLOW = pytest.mark.slow

TOOL_SOURCE = textwrap.dedent('''
    """A test tool for the pool's tool operator: it echoes a hint into its report."""
    from pydantic import BaseModel, Field

    from methods.toolspec import ToolSpec


    class HintArgs(BaseModel):
        hint: str = Field("A=3 is the best A", description="what to report")
        repeat: int = Field(1, ge=1, le=5)


    def run(args: HintArgs) -> dict:
        return {"hint": args.hint * args.repeat, "tried": 3}


    TOOLS = [ToolSpec(name="pool_hint", description="Reports a hint (test tool).",
                      args_model=HintArgs, module="pooltool", run="pooltool:run")]
''')
TOOL_MAIN = "from pooltool import TOOLS\nfrom methods._tool import main\n\nraise SystemExit(main(TOOLS))\n"


def hint_spec() -> ToolSpec:
    """The same tool, for the driver's registry (the sandbox runs the copy in the workspace)."""
    space: dict = {}
    exec(compile(TOOL_SOURCE, "pooltool", "exec"), space)  # noqa: S102 - the test's own text
    return space["TOOLS"][0]


def script(a: int, b: int, variant: int) -> str:
    return (f"# variant {variant}\nA = {a}\nB = {b}\nif A == 3 and B == 3:\n"
            "    raise SystemExit('A = B = 3 fails on purpose')\n"
            "open('result.txt', 'w').write(f'{2 * A + B} {A - B} {10 * A + B}')\n"
            "print('validation total', 2 * A + B)\n")


def reply(a: int, b: int, variant: int) -> str:
    return f"Plan {variant}: A={a}, B={b}.\n```python\n{script(a, b, variant)}```"


def replies() -> list[str]:
    """In the order a one-worker pool asks (start, two drafts, the tool, crossovers): the second
    draft fails (A = B = 3) and is fixed by the third reply; the tool's arguments; then, for
    the first crossover, a reply with no script and a repeat of the first script (both asked
    again) before a new one."""
    pairs = [(1, 2), (3, 3), (2, 1), "args", (2, 2), None, "repeat", (3, 1), (1, 3), (2, 3),
             (3, 2), (1, 1), (2, 2), (3, 1), (1, 2), (2, 1), (3, 2), (1, 3), (2, 3), (1, 1)]
    out = []
    for i, p in enumerate(pairs):
        if p is None:
            out.append("I would try a larger A next.")
        elif p == "args":
            out.append('A short run: {"repeat": 2}')
        elif p == "repeat":
            out.append(reply(1, 2, 0))
        else:
            out.append(reply(*p, i))
    return out


def calls_of(run) -> list[dict]:
    return [json.loads(line) for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def model_pool(tmp_path_factory):
    root = tmp_path_factory.mktemp("poolmodel")
    task = write_pool_task(root / "task")
    toml = task / "task.toml"
    toml.write_text('tools = ["pool_hint"]\n' + toml.read_text())
    (task / "env" / "pooltool").mkdir()
    (task / "env" / "pooltool" / "__init__.py").write_text(TOOL_SOURCE)
    (task / "env" / "pooltool" / "__main__.py").write_text(TOOL_MAIN)
    answers = root / "replies.txt"
    answers.write_text("\n---8<---\n".join(replies()))
    tools = all_tools()
    tools["pool_hint"] = hint_spec()  # registered for this run, as a method package would be
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pool_model, "CROSSOVER_PROB", 1.0)  # every node after the drafts and the tool
        config = ActorConfig(kind="pool", model=f"scripted/{answers}",
                             pool=PoolSettings(workers=1, pool_executor="threads", drafts=2),
                             tree=TreeSettings(select_top_k=2))
        try:
            begun = session.start(task, config, Budgets(max_steps=12), root / "runs", sandbox="local")
            meta = begun.drive()
        finally:
            tools.pop("pool_hint", None)
    return begun.run, meta


@SLOW
def test_the_model_writes_every_node_and_fixes_a_failed_one(model_pool):
    """The one shared model-pool run (4-8 s: slow)."""
    run, meta = model_pool
    assert meta.status == "finished", meta.status_reason
    nodes = {rec.id: (rec, step) for rec, step in nodes_of(run.steps())}
    recs = [r for r, _ in nodes.values()]
    assert recs[0].operator == "start" and recs[0].calls == 0 and not recs[0].script
    model_made = [r for r in recs if r.operator != "start"]
    assert model_made and all(r.calls >= 1 and r.tokens > 0 and r.turns >= 1 for r in model_made)
    assert {r.operator for r in recs} >= {"draft", "tool", "crossover"}
    # each node's script is the model's: the node's snapshot holds what its episode wrote
    calls = calls_of(run)
    written = {prompts.parse_reply(c["reply"])[1] for c in calls if c["reply"] and "```python" in c["reply"]}
    for rec, step in nodes.values():
        if rec.script and rec.status == "ok":
            ws = run.path / "pool" / "nodes" / str(rec.id) / "workspace" / "train.py"
            assert ws.read_text() in written
    assert len({r.script_sha for r in model_made if r.script_sha}) == len([r for r in model_made if r.script_sha])
    # the failing first turn (A = B = 3) was shown back and fixed in turn 2 of the same node
    fixed = [r for r in recs if r.turns == 2 and r.status == "ok"]
    assert fixed, [(r.id, r.turns, r.status, r.reason) for r in recs]
    fix_calls = [c for c in calls if "The script failed when it was run" in c["messages"][-1]["content"]]
    assert fix_calls and "fails on purpose" in fix_calls[0]["messages"][-1]["content"]
    # calls.jsonl: the roles, the crossover's two parents, the tool's report, the re-asks
    roles = {c["role"] for c in calls}
    assert {"pool-draft", "pool-crossover", "pool-tool", "pool-tool-args"} <= roles, roles
    cross = next(r for r in recs if r.operator == "crossover")
    prompt = next(c for c in calls if c["role"] == "pool-crossover")["messages"][-1]["content"]
    assert prompt.count("```python") >= 2 and "Write one script that combines them" in prompt
    parents = [next(x for x, _ in nodes.values() if x.id == p) for p in cross.parents]
    assert len(parents) == 2
    tool_prompt = next(c for c in calls if c["role"] == "pool-tool")["messages"][-1]["content"]
    assert "A=3 is the best AA=3 is the best A" in tool_prompt and '"tried": 3' in tool_prompt
    tool_node = next(r for r in recs if r.operator == "tool")
    assert tool_node.tool == "pool_hint" and tool_node.tool_args == {"hint": "A=3 is the best A", "repeat": 2}
    assert "A=3 is the best A" in tool_node.tool_report
    everything = json.dumps([c["messages"] for c in calls])
    assert prompts.NO_CODE[:40] in everything and "is the same as node" in everything
    # totals count every call; the run verifies
    assert meta.totals.llm_calls == len(calls) and meta.totals.tokens_in + meta.totals.tokens_out == sum(
        c["usage"]["input"] + c["usage"]["output"] for c in calls)
    assert "wrote the scripts" in meta.final_answer
    assert verify_run(run.path).ok, verify_run(run.path).problems


@SLOW
def test_the_crossover_prompt_holds_both_parents_scripts(model_pool):
    run, _ = model_pool
    recs = [r for r, _ in nodes_of(run.steps())]
    cross = [r for r in recs if r.operator == "crossover"]
    calls = [c for c in calls_of(run) if c["role"] == "pool-crossover"]
    assert cross and calls
    # the first crossover's prompt shows its two parents' scripts, as the nodes ran them
    first = cross[0]
    text = calls[0]["messages"][-1]["content"]
    for p in first.parents:
        code = (run.path / "pool" / "nodes" / str(p) / "workspace" / "train.py").read_text()
        assert code.strip() in text


def records(*specs) -> list[NodeRecord]:
    return [NodeRecord(id=i, operator=op, parents=parents, search=search,
                       status="ok" if search is not None else "failed")
            for i, (op, parents, search) in enumerate(specs, 1)]


def test_model_operations_start_draft_try_each_tool_then_cross_two_parents():
    rng = random.Random(0)
    kw = {"higher_is_better": True, "drafts": 1}
    assert next_model_operation([], [], rng, **kw)[0].operator == "start"
    one = records(("start", [], 3.0))
    assert next_model_operation(one, [], rng, **kw)[0].operator == "draft"
    two = records(("start", [], 3.0), ("draft", [], 5.0))
    op, tool = next_model_operation(two, [], rng, tools=["t1"], **kw)
    assert op.operator == "tool" and tool == "t1" and op.parents[0] in (1, 2)
    made = [*two, NodeRecord(id=3, operator="tool", parents=[2], search=4.0, tool="t1")]
    ops = {next_model_operation(made, [], random.Random(s), tools=["t1"], **kw)[0].operator for s in range(40)}
    assert {"crossover", "improve"} <= ops
    cross = next(next_model_operation(made, [], random.Random(s), **kw)[0] for s in range(40)
                 if next_model_operation(made, [], random.Random(s), **kw)[0].operator == "crossover")
    assert len(set(cross.parents)) == 2


def test_tool_arguments_are_the_models_when_valid_else_the_defaults():
    spec = hint_spec()
    assert tool_args(spec, 'Let us run it: {"hint": "x", "repeat": 2}') == ({"hint": "x", "repeat": 2}, "the model's")
    assert tool_args(spec, '{"repeat": 99}')[0] == {"hint": "A=3 is the best A", "repeat": 1}
    assert tool_args(spec, "no JSON here")[0]["repeat"] == 1


def test_the_crossover_and_tool_prompts_show_what_the_model_needs():
    j = Journal(nodes=[Node(id=1, kind="draft", code="print('one')\n", metric=1.0, status="good"),
                       Node(id=2, kind="draft", code="print('two')\n", metric=2.0, status="good")])
    common = {"problem": "p", "script": "train.py", "starting_code": "", "journal": j, "metric": "m",
              "higher_is_better": True, "timeout": 10, "budget": "b"}
    text = prompts.build_messages(kind="crossover", parent=j.nodes[0], mate=j.nodes[1], **common)[1]["content"]
    assert "print('one')" in text and "print('two')" in text and "Node 2 (score m 2)" in text
    text = prompts.build_messages(kind="tool", parent=None, tool="t", tool_args="{}",
                                  report='{"best": 7}', **common)[1]["content"]
    assert '{"best": 7}' in text and "method tool `t`" in text


def one_worker_run(tmp_path, model: str, steps: int):
    """A one-worker threads pool on the small pool task with ``model``: it must finish."""
    task = write_pool_task(tmp_path / "task")
    config = ActorConfig(kind="pool", model=model,
                         pool=PoolSettings(workers=1, pool_executor="threads", drafts=2))
    begun = session.start(task, config, Budgets(max_steps=steps), tmp_path / "runs", sandbox="local")
    meta = begun.drive()
    assert meta.status == "finished", meta.status_reason
    return begun, meta, [r for r, _ in nodes_of(begun.run.steps())]


@SLOW
def test_a_model_that_fails_fails_its_nodes_and_the_run_ends_cleanly(tmp_path):
    """Two replies only: the third call fails (the scripted model is used up), and so do the
    next two; the pool stops making nodes and closes with its Final Answer."""
    answers = tmp_path / "replies.txt"
    answers.write_text("\n---8<---\n".join([reply(2, 1, 1), reply(3, 1, 2)]))
    begun, meta, recs = one_worker_run(tmp_path, f"scripted/{answers}", steps=30)
    failed = [r for r in recs if r.status == "failed"]
    assert len(failed) == model_failures() and all("its model call failed" in r.reason and
                                                        "used up" in r.reason for r in failed)
    assert "the pool stopped making nodes" in meta.final_answer
    assert verify_run(begun.run.path).ok


def model_failures() -> int:
    from agent.pool.agent import MODEL_FAILURES

    return MODEL_FAILURES


@SLOW
def test_an_unreachable_model_ends_the_run_as_infrastructure_with_its_nodes(tmp_path, monkeypatch):
    """The provider's real SDK, pointed at a port nothing listens on: the run ends in error,
    marked as the machine's failure (resumable), with the starting node recorded."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("LABCOAT_LLM_RETRIES", "1")
    monkeypatch.setenv("LABCOAT_LLM_BACKOFF", "0.01")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-labcoat-test-unreachable")
    with StubLLM([]) as stub:
        model = connect(monkeypatch, "openai", stub)
    task = write_pool_task(tmp_path / "task")  # the stub is stopped: its port refuses
    config = ActorConfig(kind="pool", model=model,
                         pool=PoolSettings(workers=1, pool_executor="threads", drafts=2))
    begun = session.start(task, config, Budgets(max_steps=30), tmp_path / "runs", sandbox="local")
    meta = begun.drive()
    assert meta.status == "error" and meta.infrastructure, meta.status_reason
    recs = [r for r, _ in nodes_of(begun.run.steps())]
    assert recs[0].operator == "start" and recs[0].status == "ok"
    assert any(r.status == "failed" and "its model call failed" in r.reason for r in recs)
    assert verify_run(begun.run.path).ok


@SLOW
def test_a_token_budget_still_ends_with_select_and_the_final_answer(tmp_path):
    """The look-ahead counts a model node's tokens (each node under way may still take its
    fix turn): the pool stops making nodes in time, scores the best on select and answers."""
    task = write_pool_task(tmp_path / "task")
    answers = tmp_path / "replies.txt"
    answers.write_text("\n---8<---\n".join(replies()[:3] + replies()[4:5] + replies()[7:]))
    config = ActorConfig(kind="pool", model=f"scripted/{answers}",
                         pool=PoolSettings(workers=2, pool_executor="threads", drafts=2))
    begun = session.start(task, config, Budgets(max_tokens=4000), tmp_path / "runs", sandbox="local")
    meta = begun.drive()
    assert meta.status == "finished" and meta.final_answer, meta.status_reason
    t = meta.totals
    assert t.tokens_in + t.tokens_out <= 4000 and t.llm_calls >= 2
    assert [s.action for s in begun.run.steps()][-1] == "Final Answer"
    assert any(s.action == "Score Candidate" for s in begun.run.steps())
    assert verify_run(begun.run.path).ok


@SLOW
def test_a_server_error_fails_that_node_and_the_pool_goes_on(tmp_path, monkeypatch):
    """The real SDK against the loopback stub: a 500 (after the client's retry) and a garbled
    body each fail one node with the reason; the nodes after them are written and run."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("LABCOAT_LLM_RETRIES", "1")
    monkeypatch.setenv("LABCOAT_LLM_BACKOFF", "0.01")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-labcoat-test-server-error")
    good = [r for r in replies() if "```python" in r]
    behaviours = [{"text": good[0]}, {"status": 500}, {"status": 500}, {"text": good[2]},
                  {"raw": "<html>bad gateway</html>", "content_type": "text/html"},
                  {"raw": "<html>bad gateway</html>", "content_type": "text/html"},
                  {"text": good[3]}, {"text": good[4]}]
    with StubLLM(behaviours) as stub:
        begun, meta, recs = one_worker_run(tmp_path, connect(monkeypatch, "openai", stub), steps=12)
    failed = [r for r in recs if r.status == "failed"]
    assert len(failed) >= 2 and all("its model call failed" in r.reason for r in failed), \
        [(r.id, r.reason) for r in recs]
    after = [r for r in recs if r.id > failed[1].id and r.status == "ok" and r.script]
    assert after, [(r.id, r.status, r.reason) for r in recs]
    calls = calls_of(begun.run)
    assert sum(c["error"] is not None for c in calls) >= 2
    assert verify_run(begun.run.path).ok


def test_only_a_script_that_ran_and_failed_is_debugged():
    rng = random.Random(0)
    nodes = [NodeRecord(id=1, operator="start", search=3.0), NodeRecord(id=2, operator="draft", search=4.0),
             NodeRecord(id=3, operator="draft", status="failed", reason="its model call failed: 500")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pool_model, "DEBUG_PROB", 1.0)
        assert next_model_operation(nodes, [], rng, higher_is_better=True, drafts=1)[0].operator != "debug"
        nodes[2] = nodes[2].model_copy(update={"script": "train.py", "error": "Traceback"})
        op = next_model_operation(nodes, [], rng, higher_is_better=True, drafts=1)[0]
    assert op.operator == "debug" and op.of == 3


class SlowModel:
    """A scripted model that takes ``seconds`` a reply, like a real one (the model is input)."""

    def __init__(self, inner, seconds: float) -> None:
        self.inner, self.seconds, self.name = inner, seconds, inner.name

    def complete(self, messages, *, tools=None):
        import time

        time.sleep(self.seconds)
        return self.inner.complete(messages, tools=tools)


@SLOW
def test_the_driver_records_nodes_while_the_model_writes(tmp_path):
    """Model calls run on the driver's background thread: finished nodes are recorded (and
    their workers given work) while a call is under way, not after it."""
    from datetime import datetime

    task = write_pool_task(tmp_path / "task", sleep=0.6)
    answers = tmp_path / "replies.txt"
    answers.write_text("\n---8<---\n".join(r for r in replies() if "```python" in r and "(3, 3)" not in r))
    config = ActorConfig(kind="pool", model=f"scripted/{answers}",
                         pool=PoolSettings(workers=2, pool_executor="threads", drafts=3))
    begun = session.start(task, config, Budgets(max_steps=10), tmp_path / "runs", sandbox="local")
    begun.actor.ops.model = SlowModel(begun.actor.ops.model, 0.8)
    meta = begun.drive()
    assert meta.status == "finished", meta.status_reason

    def at(text: str) -> float:
        return datetime.fromisoformat(text).timestamp()

    spans = [(at(c["time"]) - c["seconds"], at(c["time"])) for c in calls_of(begun.run)]
    recorded = [at(s.time) for s in begun.run.steps() if s.action == "Record Node"]
    during = [t for t in recorded if any(a + 0.05 < t < b - 0.05 for a, b in spans)]
    assert during, (spans, recorded)


def test_a_fix_turn_whose_call_fails_keeps_the_failed_run(tmp_path):
    """The node's script failed and the model's fix turn failed too: the node is its failed
    run (worker, times, folder), the reason says both. The fast set's model-pool run (about
    1.2 s: one draft, its fix turn, then the model is used up)."""
    task = write_pool_task(tmp_path / "task")
    answers = tmp_path / "replies.txt"
    answers.write_text(reply(3, 3, 1))
    config = ActorConfig(kind="pool", model=f"scripted/{answers}",
                         pool=PoolSettings(workers=1, pool_executor="threads", drafts=2))
    begun = session.start(task, config, Budgets(max_steps=30), tmp_path / "runs", sandbox="local")
    meta = begun.drive()
    assert meta.status == "finished", meta.status_reason
    node = next(r for r, _ in nodes_of(begun.run.steps()) if r.script)
    assert node.status == "failed" and node.worker and node.started_at and node.calls == node.turns == 2
    assert "fails on purpose" in node.reason and "fix turn's model call failed" in node.reason
    assert "fails on purpose" in node.error


@SLOW
def test_the_baseline_operators_say_they_try_no_tool(tmp_path):
    task = write_pool_task(tmp_path / "task")
    toml = task / "task.toml"
    toml.write_text('tools = ["pool_hint"]\n' + toml.read_text())
    tools = all_tools()
    tools["pool_hint"] = hint_spec()
    try:
        config = ActorConfig(kind="pool", pool=PoolSettings(workers=2, pool_executor="threads"))
        meta = session.start(task, config, Budgets(max_steps=5), tmp_path / "runs", sandbox="local").drive()
    finally:
        tools.pop("pool_hint", None)
    assert meta.status == "finished", meta.status_reason
    assert "no tool operator: the no-LLM operators write no script" in meta.final_answer
    assert "(pool_hint)" in meta.final_answer


@SLOW
def test_report_tree_shows_every_operator_and_the_models_plans(model_pool):
    """`labcoat report tree` reads a model pool's nodes, the tool node too, with the plans."""
    run, _ = model_pool
    report = load_tree_report(run.path)
    rows = {row.node: row for row in report.nodes}
    recs = {r.id: r for r, _ in nodes_of(run.steps())}
    assert set(rows) == set(recs)
    assert {row.op for row in rows.values()} >= {"start", "draft", "tool", "crossover"}
    for rec in recs.values():
        if rec.plan:
            assert rec.plan.strip() in rows[rec.id].plan
