"""The LangChain tools adapter, the ``langchain`` agent type, and ``langchain/`` models."""

from __future__ import annotations

import json
import shutil

import pytest

from agent.langchain_tools import langchain_tools
from environments.acting.environment import Environment, code_mounts, sandbox_limits
from environments.task.spec import load_task
from sandbox import open_sandbox
from tests.agent.helpers import episode, react


def _script(path, items) -> str:
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n")
    return f"langchain/tests.agent.lc_fake:ScriptedToolChat?path={path}"


def test_actions_become_langchain_tools_from_the_same_models(tiny_task, tmp_path):
    task = load_task(tiny_task)
    ws = tmp_path / "ws"
    shutil.copytree(task.env_dir, ws)
    with open_sandbox("local", ws, sandbox_limits(task), code_mounts()) as sb:
        env = Environment(task, ws, sb)
        tools = {t.name: t for t in langchain_tools(env)}
        assert set(tools) >= {"List_Files", "Execute_Script", "Final_Answer", "Inspect_Script_Lines"}
        spec = env.actions["Execute Script"]
        assert tools["Execute_Script"].args_schema is spec.args_model
        assert tools["Execute_Script"].description == spec.description
        assert tools["List_Files"].invoke({"dir_path": "."}) == "data.txt\ntrain.py"
        assert "sum 6" in tools["Execute_Script"].invoke({"script_name": "train.py"})
        bad = tools["Read_File"].invoke({"file": "x"})
        assert "invalid" in bad and "file_name" in bad
        assert env.step_count == 2  # the bad input never reached the environment


def test_langchain_agent_drives_a_run_through_the_adapter(tiny_task, tmp_path):
    model = _script(tmp_path / "lc.jsonl", [
        {"content": "Let me look.", "tool_calls": [{"name": "List_Files", "args": {"dir_path": "."}}]},
        {"tool_calls": [{"name": "Write_File", "args": {"file_name": "result.txt", "content": "99"}},
                        {"name": "Final_Answer", "args": {"final_answer": "wrote 99"}}]},
    ])
    run, task, meta = episode(tiny_task, tmp_path, model, agent="langchain")
    assert meta.status == "finished" and meta.final_answer == "wrote 99"
    assert [s.action for s in run.steps()] == ["List Files", "Write File", "Final Answer"]
    assert meta.totals.llm_calls == 2 and meta.totals.tokens_in == 100
    assert len((run.path / "llm" / "calls.jsonl").read_text().splitlines()) == 2


def test_a_langchain_chat_model_can_power_the_research_agent(tiny_task, tmp_path):
    model = _script(tmp_path / "lc.jsonl", [
        {"content": react("List Files", {"dir_path": "."})},
        {"content": react("Final Answer", {"final_answer": "via langchain"})},
    ])
    run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "finished" and meta.final_answer == "via langchain"
    assert meta.totals.tokens_in == 100 and meta.totals.tokens_out == 10


def test_a_langchain_call_that_never_returns_ends_at_its_deadline():
    """A LangChain class brings its own client, which labcoat cannot bound; the deadline holds
    anyway (the call is abandoned), as a ModelError the run handles like any failed call."""
    import time

    from agent.models import ModelError, make_model

    model = make_model("langchain/tests.agent.lc_fake:HangingChat?labcoat_deadline=0.5&labcoat_retries=0")
    start = time.monotonic()
    with pytest.raises(ModelError, match=r"deadline of 0.5 s came"):
        model.complete([{"role": "user", "content": "hello"}])
    assert time.monotonic() - start < 30  # not the hour the model holds


def test_a_bad_langchain_deadline_is_a_configuration_error():
    from agent.models import make_model
    from agent.models.base import ModelConfigError

    with pytest.raises(ModelConfigError, match="labcoat_deadline"):
        make_model("langchain/tests.agent.lc_fake:HangingChat?labcoat_deadline=-1")
