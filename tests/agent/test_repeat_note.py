"""The research agent notices a repeated identical action (same action, same input, no file
changed) and says so in its next prompt (#27.7: the 0.5B model listed files seven times)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.context import AgentStep, ContextSettings, repeat_note, step_message
from tests.agent.helpers import react, write_replies
from tui.cli import app


def _step(index: int, action: str = "List Files", args=None, changed=()) -> AgentStep:
    return AgentStep(index, action, args or {"dir_path": "."}, "data.txt\ntrain.py", changed=list(changed))


def test_the_note_is_said_only_for_an_identical_action_that_changed_nothing():
    assert "step 2 repeated step 1 exactly (List Files" in repeat_note([_step(1), _step(2)])
    assert repeat_note([_step(1)]) == ""
    assert repeat_note([_step(1), _step(2, args={"dir_path": "data"})]) == ""  # other input
    assert repeat_note([_step(1), _step(2, "Read File")]) == ""  # other action
    assert repeat_note([_step(1), _step(2, changed=["out.txt"])]) == ""  # it changed a file
    unknown = _step(2)
    unknown.changed = None  # an unrecorded session: what changed is not known, nothing is claimed
    assert repeat_note([_step(1), unknown]) == ""
    assert repeat_note([_step(1), _step(2), _step(3, "Read File")]) == ""  # said once, then moved on


def test_the_note_is_in_the_next_prompt_before_the_budget():
    text = step_message([_step(1), _step(2)], "", "10 of 12 steps", ContextSettings())["content"]
    note = text.index("step 2 repeated step 1 exactly")
    assert text.index("Step 2: ") < note < text.index("Budget left: 10 of 12 steps")
    assert "repeated" not in step_message([_step(1)], "", "b", ContextSettings())["content"]


def test_a_run_tells_the_model_it_repeated_itself(tiny_task, tmp_path, monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    appender = "open('log.txt', 'a').write('x')\n"
    model = write_replies(tmp_path / "r.txt", [
        react("List Files", {"dir_path": "."}), react("List Files", {"dir_path": "."}),
        react("Write File", {"file_name": "a.py", "content": appender}),
        react("Execute Script", {"script_name": "a.py"}), react("Execute Script", {"script_name": "a.py"}),
        react("Final Answer", {"final_answer": "done"})])
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--model", model, "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--no-score", "--json"])
    assert res.exit_code == 0, res.output
    calls = (Path(json.loads(res.stdout)["run_dir"]) / "llm" / "calls.jsonl").read_text().splitlines()
    prompts = [json.loads(c)["messages"][-1]["content"] for c in calls]
    assert "step 2 repeated step 1 exactly (List Files" in prompts[2]
    assert "repeated" not in prompts[1] and "repeated" not in prompts[3]
    assert "repeated" not in prompts[5]  # the second run of a.py changed log.txt: not a no-op
