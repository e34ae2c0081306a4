"""agent/session.py: the one place a run is begun, driven and scored.

The structural checks read the source (AST), so a front end that begins or scores a run its
own way again, or a module that asks whether an actor is a replay, fails here by name. The
behavioural ones drive real replay runs on the tiny task in the local sandbox.
"""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path

import pytest

from agent import session
from agent.config import ActorConfig
from agent.fork import fork_config
from environments.record.runs import (
    BUDGET_STATUSES,
    ENDED_STATUSES,
    Budgets,
    RunDir,
    Step,
    Totals,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent", "tui", "environments", "sandbox")
#: the replay actor, the session, and the factory's kind -> actor table may name the kind
REPLAY_ALLOWED = {"agent/replay.py", "agent/session.py", "agent/factory.py"}
#: the front ends, each of which must score through ``session.score``
FRONT_ENDS = ("tui/cli/run.py", "tui/cli/scoring.py", "tui/scoring.py", "agent/batch.py")


@functools.cache  # the trees are read, never changed: parse the code base once per process
def _sources() -> dict[str, ast.Module]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith("environments/tasks/"):
                out[rel] = ast.parse(path.read_text(), rel)
    return out


def _called(tree: ast.Module) -> set[str]:
    """The names a module calls (``f(...)`` and ``x.f(...)`` both give ``f``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def _imported(tree: ast.Module, module: str) -> set[str]:
    """The names a module imports from ``module`` (at its top or inside a function)."""
    return {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == module
            for a in node.names}


def _asks_for_replay(tree: ast.Module) -> list[int]:
    """Lines comparing something with "replay" (==, !=, in (...)) or testing "replay/..."."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            consts = [c for c in [node.left, *node.comparators]
                      for c in ([c] if not isinstance(c, (ast.Tuple, ast.List, ast.Set)) else c.elts)]
            if any(isinstance(c, ast.Constant) and c.value == "replay" for c in consts):
                lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "startswith" and node.args
              and isinstance(node.args[0], ast.Constant) and str(node.args[0].value).startswith("replay")):
            lines.append(node.lineno)
    return lines


def test_no_module_but_the_replay_actor_and_the_session_asks_whether_an_actor_is_a_replay():
    found = {rel: lines for rel, tree in _sources().items()
             if rel not in REPLAY_ALLOWED and (lines := _asks_for_replay(tree))}
    assert found == {}


def test_the_check_finds_what_it_looks_for():
    tree = ast.parse('if config.kind == "replay": pass\nx = kind in ("baseline", "replay")\n'
                     'm.startswith("replay/")\n')
    assert _asks_for_replay(tree) == [1, 2, 3]


def test_one_function_scores_a_run_folder_and_every_front_end_uses_it():
    sources = _sources()
    scorers = {rel for rel, tree in sources.items() if not rel.endswith("__init__.py")  # faces re-export
               and {"score_run", "score_steps", "ensure_baseline"}
               & (_imported(tree, "environments.scoring.score") | _imported(tree, "environments.scoring.baselines"))}
    # the batch measures its tasks' missing baselines once, before any run (not a run's score)
    assert scorers == {"agent/session.py", "agent/batch.py"}
    assert "score_run" not in _imported(sources["agent/batch.py"], "environments.scoring.score")
    for rel in FRONT_ENDS:
        assert "score" in _called(sources[rel]) and "session" in ast.unparse(sources[rel]), rel


def test_agent_runs_begin_in_the_session():
    """``create_run``/``fork_run`` are called by the session alone: a person's runs too (the
    factory builds the human actor like any other)."""
    begins = {rel for rel, tree in _sources().items() if {"create_run", "fork_run"} & _called(tree)}
    assert begins == {"agent/session.py"}
    for rel in ("tui/cli/run.py", "tui/app.py", "agent/batch.py"):
        assert "make_actor" not in _called(_sources()[rel]), rel


# ---- the facts spelled once -------------------------------------------------------------------

def test_what_is_left_of_the_budgets():
    left = Budgets(max_steps=5, max_time=60, max_cost=1.0).left(
        Totals(steps=7, seconds=20, cost=0.25, tokens_in=9))
    assert (left.max_steps, left.max_time, left.max_tokens, left.max_cost) == (0, 40, None, 0.75)
    assert Budgets(max_time=60).left(Totals(seconds=20), seconds=50).max_time == 10


def test_statuses_and_the_final_answer():
    assert BUDGET_STATUSES == {"max_steps", "max_time", "max_tokens", "max_cost"}
    assert ENDED_STATUSES == BUDGET_STATUSES | {"finished"}
    answer = Step(index=1, actor="replay", action="Final Answer", observation="")
    assert answer.is_final_answer
    assert not answer.model_copy(update={"error": True}).is_final_answer
    assert not answer.model_copy(update={"action": "List Files"}).is_final_answer


# ---- start, resume, fork, score: real replay runs ----------------------------------------------

def _actions(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def _solve(value: int) -> dict:
    return {"action": "Write File", "args": {"file_name": "train.py",
                                             "content": f"open('result.txt', 'w').write('{value}')\n"}}


RUN = {"action": "Execute Script", "args": {"script_name": "train.py"}}
FINAL = {"action": "Final Answer", "args": {"final_answer": "done"}}


@pytest.mark.timeout(120)
def test_start_resume_fork_and_score_a_replay(tiny_task, tmp_path):
    actions = _actions(tmp_path / "a.jsonl", [_solve(10), RUN, _solve(42), RUN, FINAL])
    begun = session.start(tiny_task, ActorConfig(actions=str(actions)), Budgets(max_steps=2),
                          tmp_path / "runs", sandbox="local")
    run = begun.run
    assert run.meta.config.kind == "replay"  # chosen from --actions, stored resolved
    assert (run.path / "actions.jsonl").read_bytes() == actions.read_bytes()  # the actor's hook
    assert begun.drive().status == "max_steps"
    actions.unlink()  # a resumed replay reads the run's own copy
    again = session.resume(run.path, budgets=Budgets(max_steps=10))
    assert again.drive().status == "finished" and again.run.meta.budgets.max_steps == 10
    [score] = session.score(run.path)
    assert score.value == 42.0 and score.step == 5

    cont = _actions(tmp_path / "cont.jsonl", [_solve(60), RUN, FINAL])
    run = again.run  # as resumed: its raised budget
    config, budgets = fork_config(run, {"actions": str(cont)})
    fork = session.fork(run, 2, config, budgets)
    kept = [json.loads(line) for line in (fork.run.path / "actions.jsonl").read_text().splitlines()]
    assert [k["action"] for k in kept] == ["Write File", "Execute Script", "Write File",
                                          "Execute Script", "Final Answer"]
    assert fork.drive().status == "finished"
    scores = session.score(fork.run, every_step=True)
    assert [s.step for s in scores] == [1, 2, 3, 4, 5] and scores[-1].value == 60.0
    assert [s.step for s in session.score(fork.run, every_step=True, points=2)] == [1, 5]


def test_a_bad_actor_choice_leaves_no_run_behind(tiny_task, tmp_path):
    with pytest.raises(ValueError, match="unknown agent|Input should be"):
        session.start(tiny_task, ActorConfig.model_construct(kind="nonsense"), None, tmp_path / "runs",
                      sandbox="local")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_resumed_run_records_the_configuration_it_continues_with(tiny_task, tmp_path):
    actions = _actions(tmp_path / "a.jsonl", [_solve(10), RUN, FINAL])
    begun = session.start(tiny_task, ActorConfig(actions=str(actions)), Budgets(max_steps=1),
                          tmp_path / "runs", sandbox="local")
    begun.drive()
    again = session.resume(RunDir.open(begun.run.path))
    stored = RunDir.open(begun.run.path).meta
    assert stored.config.actions == str((begun.run.path / "actions.jsonl").resolve())
    assert again.actor.kind == "replay" and stored.budgets.max_steps == 1
