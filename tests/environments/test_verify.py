"""``labcoat verify``'s checks: an untampered run verifies clean; editing the trace, dropping or
editing a ledger line, or swapping a split's data or the scorer after the run each fails it and
says why. One real run (local sandbox, a tiny task with the three splits) is made once; each
case tampers with a copy of it (and of its prepared task, which the session's other tests share)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agent.fork import fork_config, fork_run
from agent.replay import ReplayActor
from agent.runner import drive
from environments.record import ledger
from environments.record.runs import RunDir, Step
from environments.reports.verify import NO_LEDGER, verify_run
from environments.scoring.evaluate import EvalResult
from environments.scoring.hidden import record_call
from environments.scoring.score import score_run
from environments.task.spec import load_task
from tests.environments.test_scoring import run_actions, write
from tests.split_task import write_split_task

VALIDATE = {"action": "Validate Submission", "args": {}}


def scored_run(tmp: Path) -> RunDir:
    """Validate (no result.txt yet: a failure), write a result (3 on search, 4 on select, 5 on
    test), validate (3), then scored (test: 5)."""
    run, task = run_actions(write_split_task(tmp / "task"), tmp,
                            [VALIDATE, write("result.txt", "3 4 5"), VALIDATE])
    assert score_run(run, task, sandbox="local").value == 5.0
    return RunDir.open(run.path)


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> RunDir:
    return scored_run(tmp_path_factory.mktemp("verify"))


def clone(run: RunDir, tmp: Path, *, task_too: bool = False) -> Path:
    """A copy of ``run`` to tamper with; ``task_too``: with a copy of its prepared task too."""
    dest = tmp / "run"
    shutil.copytree(run.path, dest, symlinks=True)
    if task_too:
        task = tmp / "prepared"
        shutil.copytree(run.meta.task_root, task, symlinks=True)
        meta = json.loads((dest / "run.json").read_text())
        meta["task_root"] = str(task)
        (dest / "run.json").write_text(json.dumps(meta))
    return dest


def rewrite_lines(path: Path, edit) -> None:
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")


def rehash_from(lines: list[str], start: int) -> list[str]:
    """A forger's ledger: every line from ``start`` re-hashed and re-linked, so the chain holds."""
    out = lines[:start]
    for line in lines[start:]:
        entry = ledger.Entry.model_validate_json(line)
        prev = json.loads(out[-1])["hash"] if out else ledger.GENESIS
        entry = entry.model_copy(update={"prev": prev})
        out.append(entry.model_copy(update={"hash": ledger.digest(entry)}).model_dump_json())
    return out


def revealed_value(line: str, value: float) -> str:
    row = json.loads(line)
    row["revealed"]["value"] = value
    return json.dumps(row)


def agent_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if json.loads(line).get("actor") == "agent"]


def test_an_untampered_run_verifies_clean(original):
    v = verify_run(original.path)
    assert v.problems == [] and v.ok, v.problems
    assert v.ledger_intact and v.matches_trace and v.hashes_match
    assert v.calls == {"search": {"agent": 2, "harness": 0}, "select": {"agent": 0, "harness": 0},
                       "test": {"agent": 0, "harness": 1}}
    assert v.test_seen_by_agent is False
    assert [(s.name, s.about) for s in v.splits] == [
        ("search", "the first number of result.txt"), ("select", "the second number of result.txt"),
        ("test", "the third number of result.txt")]
    assert [s.shown_to_agent for s in v.splits] == [2, 0, 0]
    lines = ledger.read_lines(original.path)
    assert v.head == json.loads(lines[-1])["hash"] and v.lines == len(lines)
    assert v.summary() == "ledger: intact, test not seen by the agent"


def test_editing_a_validate_steps_value_in_the_trace_is_caught(original, tmp_path):
    run = clone(original, tmp_path)

    def edit(lines):
        rows = [json.loads(line) for line in lines]
        rows[2]["data"]["value"] = 1.0  # step 3, the second Validate Submission: 3 -> 1
        return [json.dumps(r) for r in rows]

    rewrite_lines(run / "trace.jsonl", edit)
    v = verify_run(run)
    assert v.ledger_intact and not v.matches_trace and not v.ok
    assert any("trace step 3 (Validate Submission) says it revealed 1, but its ledger line"
               in p and "says 3" in p for p in v.problems), v.problems


def test_dropping_a_ledger_line_is_caught(original, tmp_path):
    run = clone(original, tmp_path)
    first = agent_lines(ledger.read_lines(run))[0]
    rewrite_lines(run / ledger.LEDGER, lambda lines: lines[:first] + lines[first + 1:])
    v = verify_run(run)
    assert not v.ledger_intact and not v.ok
    assert any("a line was dropped, added or moved" in p for p in v.problems), v.problems
    assert any("trace step 1 (Validate Submission) has no ledger line" in p for p in v.problems)
    # said where the numbering jumps, once, not on every line after the gap
    assert sum("says it is entry" in p for p in v.problems) == 1, v.problems


def test_dropping_the_last_lines_shows_against_the_records(original, tmp_path):
    """The chain cannot see its own tail cut off; the trace and score.json can."""
    run = clone(original, tmp_path)
    rewrite_lines(run / ledger.LEDGER, lambda lines: lines[:agent_lines(lines)[-1]])
    v = verify_run(run)
    assert v.ledger_intact and not v.matches_trace
    assert any("trace step 3 (Validate Submission) has no ledger line" in p for p in v.problems)
    assert any("score.json (the run's result, step 3) has no ledger line" in p for p in v.problems)


def test_editing_a_ledger_line_is_caught(original, tmp_path):
    run = clone(original, tmp_path)
    i = agent_lines(ledger.read_lines(run))[0]
    rewrite_lines(run / ledger.LEDGER, lambda lines: [
        revealed_value(line, 9.0) if n == i else line for n, line in enumerate(lines)])
    v = verify_run(run)
    assert not v.ledger_intact
    assert f"ledger line {i + 1} was edited: its content does not hash to the hash it carries" in v.problems


def test_a_ledger_rewritten_consistently_still_disagrees_with_the_trace(original, tmp_path):
    run = clone(original, tmp_path)
    i = agent_lines(ledger.read_lines(run))[1]
    rewrite_lines(run / ledger.LEDGER, lambda lines: rehash_from(
        [revealed_value(line, 9.0) if n == i else line for n, line in enumerate(lines)], i))
    v = verify_run(run)
    assert v.ledger_intact and not v.matches_trace
    assert v.head != verify_run(original.path).head  # what a published head hash would show
    assert any("trace step 3 (Validate Submission) says it revealed 3, but its ledger line "
               f"{i + 1} says 9" in p for p in v.problems), v.problems


def test_a_call_the_trace_does_not_have_is_caught(original, tmp_path):
    run = clone(original, tmp_path)
    task = load_task(RunDir.open(run).meta.task_root)
    for step in (2, 9):  # a Write File step, and one past the trace's end
        record_call(run, task, "local", "search", EvalResult(value=0.0), actor="agent",
                    purpose="validate", shown_to_agent=True, step=step)
    v = verify_run(run)
    assert v.ledger_intact and not v.matches_trace
    assert any("records the agent's call on search at step 2, but the trace shows no such call "
               "there (step 2: Write File)" in p for p in v.problems), v.problems
    assert any("claims a call at step 9, which the trace does not have (it has 3 steps)" in p
               for p in v.problems)


@pytest.mark.parametrize(("swapped", "said"), [
    ("search.key", "the search split's data changed since the run: ledger line 1 pinned"),
    ("test.key", "the test split's data changed since the run"),
    ("eval.py", "the scorer changed since the run: ledger line 1 pinned"),
])
def test_swapping_split_data_or_the_scorer_after_the_run_is_caught(original, tmp_path, swapped, said):
    run = clone(original, tmp_path, task_too=True)
    assert verify_run(run).ok  # the copy of the task is the task
    path = Path(RunDir.open(run).meta.task_root) / "scripts" / swapped
    path.write_text("1" if swapped != "eval.py" else path.read_text() + "\n# tuned after the run\n")
    v = verify_run(run)
    assert v.ledger_intact and v.matches_trace and not v.hashes_match and not v.ok
    assert any(said in p for p in v.problems), v.problems
    assert len(v.problems) == 1  # one sentence a thing changed, not one a line


def test_a_run_without_a_ledger_is_not_verified(original, tmp_path):
    run = clone(original, tmp_path)
    (run / ledger.LEDGER).unlink()
    v = verify_run(run)
    assert not v.ledger_intact and not v.ok and v.test_seen_by_agent is None
    assert v.problems == [NO_LEDGER] and "no ledger" in v.summary()


def test_a_test_value_shown_to_the_agent_is_said(original, tmp_path):
    run = clone(original, tmp_path)
    task = load_task(RunDir.open(run).meta.task_root)
    record_call(run, task, "local", "test", EvalResult(value=5.0), actor="harness",
                purpose="final", shown_to_agent=True, step=3)
    v = verify_run(run)
    assert v.ok and v.test_seen_by_agent is True
    assert v.summary() == "ledger: intact, test SEEN by the agent"


def test_a_fork_carries_what_reached_the_agent_and_pins_its_parent(original, tmp_path):
    """A fork's ledger holds the parent's calls for the steps it keeps (the agent saw them) and
    the parent's head hash: a parent rewritten since is said."""
    parent = RunDir.open(clone(original, tmp_path))
    fork, _ = fork_run(parent, 3, ReplayActor([]), config=fork_config(parent, {})[0])
    v = verify_run(fork.path)
    assert v.ok and v.problems == [] and v.notes == [], (v.problems, v.notes)
    assert v.calls["search"] == {"agent": 2, "harness": 0}
    assert v.calls["test"] == {"agent": 0, "harness": 0}  # the parent's score is not the fork's
    rewrite_lines(parent.path / ledger.LEDGER, lambda lines: rehash_from(
        [revealed_value(line, 9.0) if n == 1 else line for n, line in enumerate(lines)], 1))
    assert any("which the parent's ledger" in n and "no longer holds" in n for n in verify_run(fork.path).notes)
    rewrite_lines(fork.path / "trace.jsonl", lambda lines: lines[:1])  # the kept steps cut away
    v = verify_run(fork.path)
    assert any("says the trace held 3 steps when the run was forked, but it holds 1 now" in p
               for p in v.problems), v.problems


def test_a_run_older_than_its_ledger_says_so_once(original, tmp_path):
    """A run from before labcoat kept a ledger gets one when it goes on (``open``, then
    ``resume`` after 3 steps): what came before is said once, not as a dropped line a call."""
    run = RunDir.open(clone(original, tmp_path))
    (run.path / ledger.LEDGER).unlink()
    drive(run, load_task(run.meta.task_root), ReplayActor([]))
    v = verify_run(run.path)
    assert v.ledger_intact and not v.matches_trace
    assert v.problems == ["the ledger began after step 3 (the run is older than its ledger): 3 calls "
                          "the trace or the score records show before it are not in it, so what "
                          "reached the agent then cannot be checked"]


@pytest.mark.parametrize("name", [ledger.LEDGER, "trace.jsonl", "score.json"])
def test_a_record_that_is_no_plain_file_is_not_read(original, tmp_path, name):
    """A verifier reads folders others made: a FIFO would hang it, a link lead it out."""
    run = clone(original, tmp_path)
    (run / name).unlink()
    if name == ledger.LEDGER:
        os.mkfifo(run / name)
    else:
        (run / name).symlink_to(original.path / name)
    v = verify_run(run)
    assert not v.ok and v.problems == [f"{name} is not a regular file (a link, a FIFO or a "
                                       "device), so it was not read"]


def test_a_harness_scoring_is_matched_to_its_step_and_node(original, tmp_path):
    """A search's Score Candidate step (the tree agent's select pick, here written by hand: the
    real one is tests/agent/test_tree_select.py's) needs its harness line, same node and value."""
    run = RunDir.open(clone(original, tmp_path))
    task = load_task(run.meta.task_root)
    run.append(Step(index=4, actor="agent", action="Score Candidate", observation="Select total: 4",
                    data={"split": "select", "value": 4.0, "failure": None, "node": 2}))
    record_call(run.path, task, "local", "select", EvalResult(value=4.0), actor="harness",
                purpose="select", shown_to_agent=False, step=4, node=2)
    run.append(Step(index=5, actor="agent", action="Score Candidate", observation="Cannot score",
                    error=True, data={"split": "select", "refused": "no such step"}))  # no line
    v = verify_run(run.path)
    assert v.ok and v.calls["select"] == {"agent": 0, "harness": 1}, v.problems
    assert [s.shown_to_agent for s in v.splits] == [2, 0, 0]
    rewrite_lines(run.path / ledger.LEDGER, lambda lines: rehash_from(
        [*lines[:-1], lines[-1].replace('"node":2', '"node":1')], len(lines) - 1))
    assert "trace step 4 (Score Candidate on select) scored node 2, but its ledger line 5 says " \
           "node 1" in verify_run(run.path).problems
