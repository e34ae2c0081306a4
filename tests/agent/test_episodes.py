"""Full scripted episodes on the shipped tasks, budgets, resume, and the context the model sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.runner import Budgets
from environments.record.runs import RunDir
from environments.scoring.score import score_run
from tests.agent.helpers import episode, react, write_replies

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow  # a timed task's paired scoring (10-20 s); the digits episode below stands in
def test_vectorization_episode_ends_with_final_answer_and_scores(tmp_path):
    model = f"scripted/{EXAMPLES / 'vectorization.replies.txt'}"
    run, task, meta = episode("vectorization", tmp_path, model)
    assert meta.status == "finished", meta.status_reason
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == ["List Files", "Understand File", "Execute Script",
                                         "Edit Script (AI)", "Execute Script", "Final Answer"]
    assert "four" in steps[1].observation or "loops" in steps[1].observation
    assert "+++ b/train.py" in steps[3].observation and "sliding_window_view" in steps[3].observation
    assert steps[4].exit_code == 0 and steps[3].changed == ["train.py"]
    assert all("fields" in s.meta and s.meta["fields"]["Thought"] for s in steps)
    assert meta.totals.llm_calls == 9 and meta.totals.tokens_in > 0
    score = score_run(run, task, sandbox="local")
    assert score.value is not None and score.value > 0  # a later issue can score the trace


def test_digits_episode_ends_with_final_answer_and_scores(tmp_path):
    model = f"scripted/{EXAMPLES / 'digits.replies.txt'}"
    run, task, meta = episode("digits", tmp_path, model)
    assert meta.status == "finished", meta.status_reason
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == ["List Files", "Edit Script (AI)", "Execute Script",
                                         "Append Summary to Research Log", "Final Answer"]
    assert "validation accuracy" in steps[2].observation and steps[2].exit_code == 0
    assert "standardised" in (run.path / "research_log.md").read_text()
    score = score_run(run, task, sandbox="local")
    assert score.value is not None and score.value > 0.7


def test_undo_after_an_ai_edit_restores_the_script(tiny_task, tmp_path):
    replies = [react("Edit Script (AI)", {"script_name": "train.py", "edit_instruction": "write 7",
                                          "save_name": "train.py"}),
               "```python\nopen('result.txt', 'w').write('7')\n```",
               react("Undo Edit Script", {"script_name": "train.py"}),
               react("Final Answer", {"final_answer": "undone"})]
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies))
    assert meta.status == "finished"
    assert (run.workspace / "train.py").read_text() == (tiny_task / "env" / "train.py").read_text()


def test_invalid_input_and_unknown_action_never_reach_the_environment(tiny_task, tmp_path):
    replies = [react("Read File", {"file": "train.py"}),  # wrong field name
               react("Fly To The Moon", {}),
               react("read file", {"file_name": "train.py"}),  # case-insensitive match
               react("Final Answer", {"final_answer": "x"})]
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies))
    assert meta.status == "finished"
    assert [s.action for s in run.steps()] == ["Read File", "Final Answer"]
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    second = calls[1]["messages"][-1]["content"]
    assert "file_name" in second and "environment was not called" in second and "Usage" in second
    assert "Did you mean" in calls[2]["messages"][-1]["content"] or "Valid actions" in calls[2]["messages"][-1]["content"]


def test_long_observations_are_summarised_by_the_fast_model(tiny_task, tmp_path):
    # lines of changing shape (a log that folds short is shown whole: test_prompt.py)
    big = "print('\\n'.join(f'line {i} of ' + 'xyz'[i % 3] + ' noise' for i in range(2000)))\nprint('validation total 99')\n"
    main = [react("Write File", {"file_name": "big.py", "content": big}),
            react("Execute Script", {"script_name": "big.py"}),
            react("Final Answer", {"final_answer": "x"})]
    fast = ["The script printed 2000 noise lines and then validation total 99."]
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "m.txt", main),
                           fast_model=write_replies(tmp_path / "f.txt", fast))
    assert meta.status == "finished"
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    assert [c["role"] for c in calls] == ["agent", "agent", "summarize", "agent"]
    last_prompt = calls[-1]["messages"][1]["content"]
    assert "(summarised) The script printed 2000" in last_prompt and "line 1500 of x noise" not in last_prompt
    assert "line 1500 of x noise" in (run.steps()[1].observation_full or run.steps()[1].observation)


def test_a_summary_that_says_nothing_is_replaced_by_the_observations_ends(tiny_task, tmp_path):
    """A small local model may answer the summary prompt with its own words: the agent then keeps
    the observation's head and tail, so the run's final line is still in the prompt."""
    big = "print('\\n'.join(f'line {i} of ' + 'xyz'[i % 3] + ' noise' for i in range(2000)))\nprint('validation total 99')\n"
    main = [react("Write File", {"file_name": "big.py", "content": big}),
            react("Execute Script", {"script_name": "big.py"}),
            react("Final Answer", {"final_answer": "x"})]
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "m.txt", main),
                           fast_model=write_replies(tmp_path / "f.txt", ["The observation is too long to keep in full."]))
    assert meta.status == "finished"
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    last_prompt = calls[-1]["messages"][1]["content"]
    assert "[the summary said nothing; the observation's head and tail:]" in last_prompt
    assert "validation total 99" in last_prompt and "line 1500 of x noise" not in last_prompt


def test_context_keeps_last_steps_whole_and_older_ones_as_lines(tiny_task, tmp_path):
    replies = [react("List Files", {"dir_path": "."}, thought=f"look {i}", plan=f"plan v{i}") for i in range(5)]
    replies.append(react("Final Answer", {"final_answer": "x"}))
    run, _, _ = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies),
                        context={"keep_last": 2, "collapse_every": 1})  # exactly 2 whole
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    prompt = calls[-1]["messages"][1]["content"]
    assert prompt.count("plan v4") == 1 and "plan v1" not in prompt  # each plan once, with its step
    assert "Step 5: List Files\nPlan, rewritten:\nplan v4\nThought: look 4" in prompt
    assert "Step 4: List Files\nPlan, rewritten:\nplan v3\nThought: look 3" in prompt
    assert "Thought: look 2" not in prompt and "Step 3: List Files(.) -> " in prompt
    assert "45 of 50 steps" in prompt  # the remaining budget


@pytest.mark.parametrize("budget,status", [
    (Budgets(max_steps=2), "max_steps"),
    (Budgets(max_tokens=100), "max_tokens"),
    (Budgets(max_time=0.5), "max_time"),
])
def test_each_budget_ends_the_run_with_its_status(budget, status, tiny_task, tmp_path):
    slow = "import time\ntime.sleep(1)\n"
    replies = [react("Write File", {"file_name": "slow.py", "content": slow}),
               react("Execute Script", {"script_name": "slow.py"})]
    replies += [react("List Files", {"dir_path": "."})] * 4
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies), budgets=budget)
    assert meta.status == status
    assert 1 <= len(run.steps()) <= 3 and run.meta.finished_at


def test_cost_budget_with_a_user_price_table(tiny_task, tmp_path, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"scripted/": {"input": 100.0, "output": 100.0}}))
    monkeypatch.setenv("LABCOAT_PRICES", str(prices))
    replies = [react("List Files", {"dir_path": "."})] * 5
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies),
                           budgets=Budgets(max_cost=0.05))
    assert meta.status == "max_cost" and meta.totals.cost >= 0.05 and len(run.steps()) < 5


def test_scripted_replies_exhausted_is_an_error_with_the_trace_intact(tiny_task, tmp_path):
    replies = [react("List Files", {"dir_path": "."})]
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies))
    assert meta.status == "error" and "used up" in meta.status_reason and len(run.steps()) == 1


def test_a_runs_call_log_replays_its_replies_exactly(tiny_task, tmp_path):
    replies = [react("List Files", {"dir_path": "."}), react("Final Answer", {"final_answer": "same"})]
    first, _, _ = episode(tiny_task, tmp_path / "a", write_replies(tmp_path / "r.txt", replies))
    log = first.path / "llm" / "calls.jsonl"
    again, _, meta = episode(tiny_task, tmp_path / "b", f"scripted/{log}")
    assert meta.status == "finished" and meta.final_answer == "same"
    assert [s.action for s in again.steps()] == [s.action for s in first.steps()]


def test_resume_rebuilds_the_context_from_the_trace(tiny_task, tmp_path):
    from agent.factory import make_actor
    from agent.runner import create_run, drive

    replies = [react("List Files", {"dir_path": "."}, plan="plan before the stop"),
               react("Final Answer", {"final_answer": "after resume"})]
    model = write_replies(tmp_path / "r.txt", replies)
    actor = make_actor(None, model=model)
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local",
                           budgets=Budgets(max_steps=1))
    assert drive(run, task, actor).status == "max_steps"
    run.meta.budgets["max_steps"] = 5
    run.save_meta()
    actor2 = make_actor(None, model=write_replies(tmp_path / "r2.txt", replies[1:]))
    meta = drive(RunDir.open(run.path), task, actor2)
    assert meta.status == "finished" and meta.final_answer == "after resume"
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    assert "plan before the stop" in calls[-1]["messages"][1]["content"]


def test_understand_file_reads_in_chunks_and_merges(tiny_task, tmp_path):
    from agent.factory import make_actor
    from agent.runner import create_run, drive

    (tiny_task / "env" / "long.py").write_text("".join(f"x{i} = {i}\n" for i in range(60)))
    replies = [react("Understand File", {"file_name": "long.py", "things_to_look_for": "the constants"}),
               "part one: x0..x29", "part two: x30..x59", "merged: sixty constants x0..x59",
               react("Final Answer", {"final_answer": "x"})]
    model = write_replies(tmp_path / "r.txt", replies)
    actor = make_actor(None, model=model)
    actor.tools.chunk_chars = 300  # about 520 chars: two chunks
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local")
    assert drive(run, task, actor).status == "finished"
    assert run.steps()[0].observation == "merged: sixty constants x0..x59"
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    chunks = [c for c in calls if c["role"] == "understand"]
    assert len(chunks) == 3 and "x0 = 0" in chunks[0]["messages"][0]["content"]
    assert "x59 = 59" not in chunks[0]["messages"][0]["content"]
    assert "part one" in chunks[-1]["messages"][0]["content"]  # the merge sees every part


def test_edit_script_segment_changes_only_its_lines(tiny_task, tmp_path):
    replies = [react("Edit Script Segment (AI)", {"script_name": "train.py", "start_line_number": 2,
                                                  "end_line_number": 2, "edit_instruction": "write 3x the sum",
                                                  "save_name": "train2.py"}),
               "```python\nopen('result.txt', 'w').write(str(3 * sum(nums)))\n```",
               react("Final Answer", {"final_answer": "x"})]
    run, _, meta = episode(tiny_task, tmp_path, write_replies(tmp_path / "r.txt", replies))
    assert meta.status == "finished"
    old = (tiny_task / "env" / "train.py").read_text().splitlines()
    new = (run.workspace / "train2.py").read_text().splitlines()
    assert new[0] == old[0] and new[2] == old[2] and new[1] == "open('result.txt', 'w').write(str(3 * sum(nums)))"
    assert "-open('result.txt', 'w').write(str(sum(nums)))" in run.steps()[0].observation
    assert (run.workspace / "train.py").read_text() == "\n".join(old) + "\n"
