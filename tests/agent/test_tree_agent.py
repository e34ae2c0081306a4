"""The solution-tree agent end to end, with the scripted model and the real sandbox: a search
that reaches the reference's score on digits (draft, debug on error, improve the best), every
node a recorded step with its parent, Validate Submission as the metric, the best node restored,
budgets that end the search with the best node in place, and the real SDKs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from agent.models import make_model
from agent.models.scripted import ScriptedModel
from agent.runner import RunHooks, create_run, drive
from agent.tree.agent import TreeAgent, TreeSettings, rebuild
from agent.tree.nodes import Journal
from agent.tree.policy import PolicySettings
from environments.record.runs import Budgets, RunDir
from environments.scoring.score import score_run
from tests.agent.helpers import write_replies
from tests.agent.stub_llm import StubLLM, connect
from tests.conftest import write_task

TASKS = Path(__file__).resolve().parents[2] / "environments" / "tasks"


def reply(plan: str, code: str) -> str:
    return f"{plan}\n\n```python\n{code.rstrip()}\n```"


def tree_agent(model: str, **policy) -> TreeAgent:
    return TreeAgent(make_model(model), TreeSettings(policy=PolicySettings(**policy)))


def run_tree(task, tmp_path: Path, actor: TreeAgent, model: str, budgets: Budgets):
    run, spec = create_run(task, actor, tmp_path / "runs", sandbox="local", model=model,
                           budgets=budgets)
    return run, spec, drive(run, spec, actor)


def tags(run) -> list[dict]:
    return [s.meta.get("tree") for s in RunDir.open(run.path).steps()]


# ---- digits: the scripted search reaches the reference --------------------------------------------

VALIDATE_REFERENCE = """

# held-out check of the same recipe, after the submission is written
perm = torch.randperm(len(x_train))
n_val = len(x_train) // 5
check = fit(perm[n_val:])
with torch.no_grad():
    acc = (check(x_train[perm[:n_val]]).argmax(1) == y_train[perm[:n_val]]).float().mean().item()
print(f"validation accuracy: {acc:.4f}")
"""


@pytest.mark.slow
def test_digits_search_drafts_debugs_improves_and_reaches_the_reference(tmp_path):
    start = (TASKS / "digits" / "env" / "train.py").read_text()
    reference = (TASKS / "digits" / "reference" / "train.py").read_text()
    buggy = start.replace("nn.Linear(64, HIDDEN)", "nn.Linear(64, HIDEN)")
    weak = start.replace("EPOCHS = 12", "EPOCHS = 2")
    assert buggy != start and weak != start
    model = write_replies(tmp_path / "replies.txt", [
        reply("A one-layer MLP.", buggy),
        reply("The same MLP, trained briefly.", weak),
        reply("HIDEN is a typo of HIDDEN.", start),
        reply("Standardise, go wider and regularise.", reference + VALIDATE_REFERENCE),
    ])
    actor = tree_agent(model, num_drafts=2, debug_prob=1.0)
    # 16 steps: each node is scored on the hidden search split (write, run, score), and the
    # look-ahead keeps room for the close: the top 3 scored on select, restore, answer
    run, task, meta = run_tree("digits", tmp_path, actor, model, Budgets(max_steps=16))
    assert meta.status == "finished" and meta.final_answer, meta.status_reason

    j = actor.journal
    assert [(n.id, n.kind, n.parent, n.status) for n in j.nodes] == [
        (1, "draft", None, "buggy"), (2, "draft", None, "good"), (3, "debug", 1, "good"),
        (4, "improve", 3, "good")]
    assert "NameError" in j.get(1).error
    assert j.get(3).metric > j.get(2).metric  # so node 3 was the best, the one improved
    assert j.best().id == 4 and j.get(4).metric_source == "search"
    assert j.chosen().id == 4 and [n.select is not None for n in j.nodes] == [False, True, True, True]
    # every node is ordinary steps of the trace, with its parent; the best is the final workspace
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == (["Write File", "Execute Script"]
                                         + ["Write File", "Execute Script", "Score Candidate"] * 3
                                         + ["Score Candidate"] * 3 + ["Final Answer"])
    assert [(t["node"], t["parent"], t["op"]) for t in tags(run)] == [
        (1, None, "draft"), (1, None, "draft"), (2, None, "draft"), (2, None, "draft"),
        (2, None, "draft"), (3, 1, "debug"), (3, 1, "debug"), (3, 1, "debug"), (4, 3, "improve"),
        (4, 3, "improve"), (4, 3, "improve"), (4, None, "select"), (3, None, "select"),
        (2, None, "select"), (4, None, "final")]
    assert steps[0].meta["plan"] == "A one-layer MLP."
    assert (run.workspace / "train.py").read_text() == j.get(4).code
    assert "node 4 (improve)" in meta.final_answer
    score = score_run(run, task, sandbox="local")
    assert score.value == pytest.approx(0.9029, abs=0.01) and score.normalized > 0.9, score
    assert score.success


# ---- Validate Submission, restoring the best, rebuilding the tree ------------------------------------

VALIDATED_TOML = ('metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = ["train.py"]\n'
                  '[feedback]\nkind = "validation"\nbudget = 2\n')
VALIDATED_EVAL = textwrap.dedent("""
    import os
    def _read(folder):
        path = os.path.join(folder, "result.txt")
        if not os.path.exists(path):
            raise FileNotFoundError("no result.txt")
        return float(open(path).read())
    def get_score(submission_folder):
        return _read(submission_folder)
    def get_validation_score(submission_folder):
        return _read(submission_folder)
""")


def writes(value: int, printed: int) -> str:
    return f"open('result.txt', 'w').write('{value}')\nprint('validation total {printed}')\n"


def test_validation_scores_nodes_and_the_best_node_is_restored(tmp_path):
    task = write_task(tmp_path / "val", toml=VALIDATED_TOML, eval_body=VALIDATED_EVAL)
    codes = [writes(10, 999), writes(30, 999), writes(20, 20)]
    model = write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in enumerate(codes, 1)])
    actor = tree_agent(model, num_drafts=3, debug_prob=0.0)
    run, spec, meta = run_tree(task, tmp_path, actor, model, Budgets(max_steps=12))
    assert meta.status == "finished", meta.status_reason
    j = actor.journal
    # the validation split's value, not what the script printed; with the budget spent, the print
    assert [(n.metric, n.metric_source) for n in j.nodes] == [
        (10.0, "validation"), (30.0, "validation"), (20.0, "output")]
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == [
        "Write File", "Execute Script", "Validate Submission", "Write File", "Execute Script",
        "Validate Submission", "Write File", "Execute Script", "Restore Workspace", "Final Answer"]
    assert [t["op"] for t in tags(run)][-2:] == ["restore", "final"]
    assert steps[-2].args == {"step": 5} and not steps[-2].error  # node 2's run: nothing re-run
    assert (run.workspace / "train.py").read_text() == codes[1]
    assert (run.workspace / "result.txt").read_text() == "30"
    assert score_run(run, spec, sandbox="local").value == 30.0
    # the trace alone rebuilds the same tree (what a resume starts from)
    again, current = rebuild(steps, Journal(), "total")
    assert [n.model_dump() for n in again.nodes] == [n.model_dump() for n in j.nodes]
    assert current == 2


def test_a_failed_write_makes_a_buggy_node_and_it_is_debugged(tmp_path):
    task = write_task(tmp_path / "ro", read_only="data.txt\ntrain.py\n")
    model = write_replies(tmp_path / "r.txt", [reply("edit", writes(9, 9)), reply("again", writes(8, 8))])
    actor = tree_agent(model, num_drafts=1, debug_prob=1.0)
    # 5 steps: room for a node of 2 and the closing 2 (restore, answer) before each of the two nodes
    run, _, meta = run_tree(task, tmp_path, actor, model, Budgets(max_steps=5))
    assert meta.status == "finished", meta.status_reason
    first, fix = actor.journal.nodes
    assert first.status == "buggy" and "read-only" in first.error.lower()
    assert (fix.kind, fix.parent, fix.status) == ("debug", 1, "buggy")
    calls = [json.loads(line) for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    assert "read-only" in calls[1]["messages"][-1]["content"].lower()
    assert [s.action for s in RunDir.open(run.path).steps()] == ["Write File", "Write File", "Final Answer"]
    assert "none ran" in meta.final_answer


# ---- budgets --------------------------------------------------------------------------------------

@pytest.mark.parametrize("budget", ["tokens", "cost"])
def test_a_budget_ends_the_search_with_the_best_node_in_place(budget, tiny_task, tmp_path, monkeypatch):
    prices = tmp_path / "prices.toml"
    prices.write_text('["scripted/"]\ninput = 1000.0\noutput = 1000.0\ncached = 1000.0\n')
    monkeypatch.setenv("LABCOAT_PRICES", str(prices))
    codes = [writes(50, 50), writes(40, 40), writes(70, 70)]
    model = write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in enumerate(codes, 1)])
    # one node's use of the budget, measured: a run with room for one node only
    _, _, measured = run_tree(tiny_task, tmp_path / "a", tree_agent(model, num_drafts=3),
                                  model, Budgets(max_steps=5))
    assert measured.totals.llm_calls == 1 and measured.status == "finished"
    one = measured.totals
    limit = (Budgets(max_tokens=int(1.5 * (one.tokens_in + one.tokens_out))) if budget == "tokens"
             else Budgets(max_cost=1.5 * one.cost))
    assert one.cost > 0
    actor = tree_agent(model, num_drafts=3)
    run, _, meta = run_tree(tiny_task, tmp_path / "b", actor, model, limit)
    # ended by the agent's look-ahead, inside the budget, with its Final Answer
    assert meta.status == "finished" and meta.final_answer, meta.status_reason
    assert meta.totals.llm_calls == 1 and len(actor.journal.nodes) == 1
    assert limit.exhausted(meta.totals, meta.totals.seconds) is None
    assert (run.workspace / "result.txt").read_text() == "50"


def test_a_step_budget_stops_before_a_node_that_would_not_fit(tiny_task, tmp_path):
    codes = [writes(50, 50), writes(40, 40), writes(70, 70)]
    model = write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in enumerate(codes, 1)])
    actor = tree_agent(model, num_drafts=3)
    # node 1 (2 steps), node 2 (2 steps), then restoring node 1's run (1) and the answer: 6 steps;
    # a third node would leave 6 + restore + answer = 8 > 7
    run, spec, meta = run_tree(tiny_task, tmp_path, actor, model, Budgets(max_steps=7))
    assert meta.status == "finished", meta.status_reason
    assert len(actor.journal.nodes) == 2 and meta.totals.steps == 6
    restore = RunDir.open(run.path).steps()[-2]
    assert (restore.action, restore.args, restore.changed) == ("Restore Workspace", {"step": 2},
                                                              ["result.txt", "train.py"])
    assert (run.workspace / "train.py").read_text() == codes[0]
    assert (run.workspace / "result.txt").read_text() == "50"
    assert score_run(run, spec, sandbox="local").value == 50.0
    # its actions replayed (the replay actor brings Restore Workspace when they use it): the same end
    from agent.actor import Proposal
    from agent.replay import ReplayActor

    replay = ReplayActor([Proposal(action=s.action, args=s.args) for s in RunDir.open(run.path).steps()])
    again, _, done = run_tree(tiny_task, tmp_path / "replay", replay, "replay", Budgets())
    assert done.status == "finished" and not any(s.error for s in RunDir.open(again.path).steps())
    assert (again.workspace / "result.txt").read_text() == "50"


def test_the_look_ahead_keeps_room_to_restore_the_best_after_a_worse_node(tiny_task, tmp_path):
    """Before each node the closing steps are counted at their worst (the node may not beat the
    best, which must then be restored): with 5 steps, a second node (2 steps) that came out
    worse would leave 4 + restore 1 = 5 steps and no room for the Final Answer."""
    codes = [writes(50, 50), writes(40, 40), writes(70, 70)]
    model = write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in enumerate(codes, 1)])
    actor = tree_agent(model, num_drafts=3)
    run, _, meta = run_tree(tiny_task, tmp_path, actor, model, Budgets(max_steps=5))
    assert meta.status == "finished" and meta.final_answer, meta.status_reason
    assert len(actor.journal.nodes) == 1 and meta.totals.steps == 3  # node 1, its answer
    assert (run.workspace / "result.txt").read_text() == "50"


@pytest.mark.slow
def test_a_node_that_overruns_the_time_budget_is_cut_short_and_the_best_restored(tiny_task, tmp_path):
    """The look-ahead counts the costliest node so far, so a node much slower than the others can
    still run the clock out: the runner stops the run (max_time) and takes the agent's closing
    step, a free Restore Workspace to the best node's run, so the run ends with that node's
    script and outputs, not the one the budget cut short."""
    # the budget leaves the fast node room on a loaded machine (it takes ~1 s idle); the slow
    # one alone overruns it (the runner stops the run after the step, not during it)
    slow = "import time\nopen('result.txt', 'w').write('40')\ntime.sleep(14)\nprint('validation total 40')\n"
    model = write_replies(tmp_path / "r.txt", [reply("fast", writes(50, 50)), reply("slow", slow)])
    actor = tree_agent(model, num_drafts=3)
    run, spec, meta = run_tree(tiny_task, tmp_path, actor, model, Budgets(max_time=12.0))
    assert meta.status == "max_time", meta.status_reason
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == ["Write File", "Execute Script", "Write File", "Execute Script",
                                         "Restore Workspace"]
    closing = steps[-1]
    assert closing.meta["closing"] and closing.meta["tree"]["op"] == "restore" and closing.args == {"step": 2}
    assert "closing step 5, Restore Workspace: done" in meta.status_reason
    assert (run.workspace / "train.py").read_text() == writes(50, 50)
    assert (run.workspace / "result.txt").read_text() == "50"
    assert score_run(run, spec, sandbox="local").value == 50.0  # the run's result: its last step


def test_a_budget_spent_by_a_nodes_model_call_still_ends_with_the_best(tiny_task, tmp_path):
    """The runner checks the budgets between steps, so a node whose model call alone spends the
    token budget has its script written and then the run stops, before it runs: the workspace
    then holds that node's script beside the best node's outputs. The closing step must see
    what the workspace holds (the written script), not what the search last settled."""
    codes = [writes(50, 50), writes(40, 40) + "# " + "a longer second script; " * 40 + "\n"]
    model = write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in enumerate(codes, 1)])
    _, _, measured = run_tree(tiny_task, tmp_path / "a", tree_agent(model, num_drafts=3), model,
                              Budgets(max_steps=5))
    one = measured.totals.tokens_in + measured.totals.tokens_out
    actor = tree_agent(model, num_drafts=3)
    run, _, meta = run_tree(tiny_task, tmp_path / "b", actor, model, Budgets(max_tokens=int(2.05 * one)))
    steps = RunDir.open(run.path).steps()
    assert meta.status == "max_tokens", meta.status_reason
    assert [s.action for s in steps] == ["Write File", "Execute Script", "Write File", "Restore Workspace"]
    assert (run.workspace / "train.py").read_text() == codes[0]
    assert (run.workspace / "result.txt").read_text() == "50"


# ---- replies without a script ---------------------------------------------------------------------

def test_a_reply_without_a_script_is_asked_again_and_then_ends_the_run(tiny_task, tmp_path):
    model = write_replies(tmp_path / "r.txt", ["I would write a script.", reply("now", writes(8, 8))])
    actor = tree_agent(model, num_drafts=1)
    run, _, meta = run_tree(tiny_task, tmp_path, actor, model, Budgets(max_steps=5))
    assert meta.status == "finished" and meta.totals.llm_calls == 2
    calls = [json.loads(line) for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    assert "no ```python code block" in calls[1]["messages"][-1]["content"]

    model = write_replies(tmp_path / "s.txt", ["no script here"] * 3)
    actor = TreeAgent(make_model(model), TreeSettings(), format_retries=2)
    run, _, meta = run_tree(tiny_task, tmp_path / "x", actor, model, Budgets(max_steps=5))
    assert meta.status == "error" and "without a script" in meta.status_reason
    assert RunDir.open(run.path).steps() == [] and meta.totals.llm_calls == 3


# ---- every provider through the Model protocol ------------------------------------------------------

def test_the_tree_agent_runs_on_the_real_sdks(provider, monkeypatch, tiny_task, tmp_path):
    with StubLLM([{"text": reply("write 12", writes(12, 12)), "usage": [1000, 50, 0]}]) as stub:
        model = connect(monkeypatch, provider, stub)
        actor = tree_agent(model, num_drafts=1)
        _, _, meta = run_tree(tiny_task, tmp_path, actor, model, Budgets(max_steps=5))
    assert meta.status == "finished", meta.status_reason
    assert (meta.totals.llm_calls, meta.totals.tokens_in, meta.totals.tokens_out) == (1, 1000, 50)
    assert meta.totals.cost > 0
    assert actor.journal.get(1).metric == 12.0
    assert "Make result.txt as large as you can." in json.dumps(stub.requests[0]["body"])


# ---- resume ---------------------------------------------------------------------------------------

class StopAfter(RunHooks):
    def __init__(self, steps: int) -> None:
        self.steps = steps

    def after_step(self, run, step) -> None:
        self.stop_requested = step.index >= self.steps


@pytest.mark.parametrize("stop_after, later, ids, steps", [
    (2, [40], [1, 2], 6),      # stopped between nodes: node 1 kept, restored at the end
    (1, [40, 70], [2, 3], 6),  # stopped inside node 1: it is dropped, its id not reused
])
def test_a_resumed_search_rebuilds_the_tree_from_the_trace(stop_after, later, ids, steps, tiny_task,
                                                           tmp_path):
    first = write_replies(tmp_path / "a.txt", [reply("try 1", writes(50, 50))])
    actor = tree_agent(first, num_drafts=2)
    run, spec = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local", model=first,
                           budgets=Budgets(max_steps=7))
    assert drive(run, spec, actor, hooks=StopAfter(stop_after)).status == "interrupted"
    codes = [writes(v, v) for v in later]
    second = write_replies(tmp_path / "b.txt", [reply(f"later {v}", c) for v, c in zip(later, codes)])
    resumed = tree_agent(second, num_drafts=2)
    meta = drive(RunDir.open(run.path), spec, resumed)
    assert meta.status == "finished", meta.status_reason
    assert [n.id for n in resumed.journal.nodes] == ids and meta.totals.steps == steps
    best = resumed.journal.best()
    assert (run.workspace / "train.py").read_text() == best.code
    assert (run.workspace / "result.txt").read_text() == str(int(best.metric))
    written = [s.meta["tree"]["node"] for s in RunDir.open(run.path).steps()
               if s.action == "Write File" and s.meta["tree"]["op"] == "draft"]
    assert len(written) == len(set(written)) == stop_after // 2 + len(later) + stop_after % 2
    calls = [json.loads(line) for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    if stop_after == 2:  # the rebuilt node is in the resumed search's memory
        assert "node 1 (draft): try 1 -> validation total 50" in calls[-1]["messages"][-1]["content"]


# ---- a small window (the local model) -------------------------------------------------------------

class SmallWindow(ScriptedModel):
    """A scripted model with a window just larger than its first prompt (a fake of the
    llama.cpp model's optional ``context_window``/``count_tokens``), recording each prompt."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.window: int | None = None
        self.sent: list[tuple[int, str]] = []

    @property
    def context_window(self) -> int:
        return self.window or 10**9

    def count_tokens(self, messages) -> int:
        n = sum(len(m["content"]) for m in messages) // 4
        self.window = self.window or n + 5
        return n

    def complete(self, messages, *, tools=None):
        self.sent.append((self.count_tokens(messages), messages[-1]["content"]))
        return super().complete(messages, tools=tools)


def test_a_small_window_drops_old_memory_then_the_starting_script(tmp_path):
    start = "# " + "a long comment about the data; " * 80 + "\n" + "print('validation total 6')\n"
    task = write_task(tmp_path / "win", files={"env/train.py": start})
    codes = [writes(50, 50), writes(70, 70), writes(80, 80)]
    path = Path(write_replies(tmp_path / "r.txt", [reply(f"try {i}", c) for i, c in
                                                   enumerate(codes, 1)]).removeprefix("scripted/"))
    model = SmallWindow(path)
    actor = TreeAgent(model, TreeSettings(policy=PolicySettings(num_drafts=2, debug_prob=0.0)))
    _, _, meta = run_tree(task, tmp_path, actor, model.name, Budgets(max_steps=9))
    assert meta.status == "finished", meta.status_reason
    assert [n.kind for n in actor.journal.nodes] == ["draft", "draft", "improve"]
    assert all(n <= model.window for n, _ in model.sent)
    (_, first), (_, second), (_, third) = model.sent
    assert "a long comment" in first and "a long comment" in second
    assert "node 1 (draft)" not in second  # the memory went first
    assert "a long comment" not in third and "validation total 70" in third  # then the start


# ---- a run cut short is scored on its best node ---------------------------------------------------

def test_a_tree_run_that_ends_in_error_is_scored_on_its_best_node(tiny_task, tmp_path):
    """A tree search reports its best node: a run that ends normally restored it first (its
    last step is the result); one that ends in ``error`` mid-search is scored on the best
    node's run all the same, not on the worse node its workspace was left with."""
    from agent import session
    from agent.tree.view import result_step
    from environments.scoring.score import load_scores

    codes = [writes(50, 50), writes(40, 40)]
    model = write_replies(tmp_path / "r.txt", [*(reply(f"try {i}", c) for i, c in enumerate(codes, 1)),
                                               "no script", "still none"])
    actor = TreeAgent(make_model(model), TreeSettings(policy=PolicySettings(num_drafts=3)),
                      format_retries=1)
    run, spec, meta = run_tree(tiny_task, tmp_path, actor, model, Budgets(max_steps=20))
    assert meta.status == "error" and "without a script" in meta.status_reason
    steps = RunDir.open(run.path).steps()
    assert len(steps) == 4 and (run.workspace / "result.txt").read_text() == "40"
    assert result_step(steps, spec.metric, spec.higher_is_better) == 2  # node 1's run
    [score] = session.score(run, sandbox="local", baseline_runs=1)
    assert (score.step, score.value) == (2, 50.0)
    recorded = json.loads((run.path / "score.json").read_text())
    assert (recorded["step"], recorded["value"]) == (2, 50.0)
    # with the curve too: every step scored, and the run's score is still the best node's
    scores = session.score(run, sandbox="local", every_step=True, baseline_runs=1)
    assert [s.step for s in scores] == [1, 2, 3, 4, 2] and scores[-1].value == 50.0
    assert json.loads((run.path / "score.json").read_text())["step"] == 2
    assert load_scores(run.path)[4].value == 40.0

    # a run that ended normally restored its best node: its last step is its result
    finished = tree_agent(model, num_drafts=3)
    ok_run, _, ok = run_tree(tiny_task, tmp_path / "ok", finished, model, Budgets(max_steps=7))
    assert ok.status == "finished" and ok.totals.steps == 6, ok.status_reason  # 2 nodes, restore, answer
    assert result_step(RunDir.open(ok_run.path).steps(), spec.metric) is None
