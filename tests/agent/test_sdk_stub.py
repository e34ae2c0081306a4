"""The real openai and anthropic SDKs against a loopback stub server: episodes, retries,
timeouts, malformed replies, and keys that never reach the run directory or the sandbox."""

from __future__ import annotations

import json

import pytest

from agent.runner import Budgets
from environments.record.runs import RunDir
from tests.agent.helpers import episode, files_containing, react
from tests.agent.stub_llm import KEY, StubLLM, connect

DUMP = "import os, json\nopen('env_dump.json', 'w').write(json.dumps(dict(os.environ)))\nprint('vars', len(os.environ))\n"


def test_normal_episode_counts_usage_and_keeps_keys_out(provider, monkeypatch, tiny_task, tmp_path):
    replies = [react("Write File", {"file_name": "dump.py", "content": DUMP}),
               react("Execute Script", {"script_name": "dump.py"}),
               react("Final Answer", {"final_answer": "dumped"})]
    with StubLLM([{"text": r, "usage": [1000, 50, 400]} for r in replies]) as stub:
        model = connect(monkeypatch, provider, stub)
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "finished" and meta.final_answer == "dumped"
    t = meta.totals
    assert (t.llm_calls, t.tokens_in, t.tokens_out, t.tokens_cached) == (3, 3000, 150, 1200)
    p_in, p_out, p_cached = (2.0, 10.0, 1.0) if provider == "openai" else (3.0, 15.0, 0.3)
    assert t.cost == pytest.approx(3 * (600 * p_in + 400 * p_cached + 50 * p_out) / 1e6)
    assert json.loads((run.path / "run.json").read_text())["totals"]["llm_calls"] == 3
    # the key was really used on the wire ...
    sent = [r["headers"].get("authorization", "") + r["headers"].get("x-api-key", "") for r in stub.requests]
    assert all(KEY in s for s in sent)
    # ... but the sandbox never saw it and no file of the run holds it
    dumped = json.loads((run.workspace / "env_dump.json").read_text())
    assert KEY not in json.dumps(dumped) and f"{provider.upper()}_API_KEY" not in dumped
    assert files_containing(run.path, KEY) == []
    calls = [json.loads(line) for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    assert [c["role"] for c in calls] == ["agent"] * 3 and calls[0]["usage"]["cached"] == 400
    assert "Research Problem" in calls[0]["messages"][0]["content"]
    if provider == "anthropic":  # the static prefix is marked for prompt caching
        assert stub.requests[0]["body"]["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_429_then_success_is_retried(provider, monkeypatch, tiny_task, tmp_path):
    behaviours = [{"status": 429, "headers": {"retry-after": "0.1"}},
                  {"text": react("Final Answer", {"final_answer": "ok"})}]
    with StubLLM(behaviours) as stub:
        model = connect(monkeypatch, provider, stub)
        _, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "finished"
    assert len(stub.requests) == 2 and meta.totals.retries == 1 and meta.totals.llm_calls == 1


def test_500s_past_the_retry_limit_end_the_run_with_error(provider, monkeypatch, tiny_task, tmp_path):
    behaviours = [{"text": react("List Files", {"dir_path": "."})}] + [{"status": 500}] * 3
    with StubLLM(behaviours) as stub:
        model = connect(monkeypatch, provider, stub)
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "error" and "InternalServerError" in meta.status_reason
    assert len(stub.requests) == 1 + 3  # one try + LABCOAT_LLM_RETRIES=2 retries
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == ["List Files"]  # the trace is intact
    last = json.loads((run.path / "llm" / "calls.jsonl").read_text().splitlines()[-1])
    assert last["error"] and last["reply"] is None


def test_hung_response_past_the_timeout_ends_the_run(provider, monkeypatch, tiny_task, tmp_path):
    with StubLLM([{"hang": 30}, {"hang": 30}]) as stub:
        model = connect(monkeypatch, provider, stub) + "?timeout=0.5&max_retries=1"
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "error" and "Timeout" in meta.status_reason
    assert len(stub.requests) == 2 and run.steps() == []


def test_replies_not_in_the_format_get_a_reminder_then_bounded(provider, monkeypatch, tiny_task, tmp_path):
    behaviours = [{"text": "I think we should look at the files."},
                  {"text": "Action: List Files\nAction Input: {\"dir_path\": \".\""},
                  {"text": react("Final Answer", {"final_answer": "done"})},
                  ]
    with StubLLM(behaviours) as stub:
        model = connect(monkeypatch, provider, stub)
        _, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "finished" and meta.totals.llm_calls == 3
    last = stub.requests[-1]["body"]["messages"]
    assert "could not be used" in last[-1]["content"] and "not balanced" in last[-1]["content"]
    with StubLLM([{"text": "no format at all"}] * 4) as stub:
        model = connect(monkeypatch, provider, stub)
        run, _, meta = episode(tiny_task, tmp_path / "again", model, fast_model=model)
    assert meta.status == "error" and "unusable" in meta.status_reason and len(stub.requests) == 4


def test_tools_mode_uses_native_tool_calls(provider, monkeypatch, tiny_task, tmp_path):
    behaviours = [{"text": "Thought: look around", "tool_calls": [{"name": "List_Files", "arguments": {"dir_path": "."}}]},
                  {"text": "", "tool_calls": [{"name": "Final_Answer", "arguments": {"final_answer": "tools"}}]}]
    with StubLLM(behaviours) as stub:
        model = connect(monkeypatch, provider, stub)
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model, mode="tools")
    assert meta.status == "finished" and meta.final_answer == "tools"
    assert [s.action for s in run.steps()] == ["List Files", "Final Answer"]
    tools = stub.requests[0]["body"]["tools"]
    names = [t["function"]["name"] if provider == "openai" else t["name"] for t in tools]
    assert "Edit_Script_AI" in names and "Execute_Script" in names
    assert run.steps()[0].meta["fields"]["Thought"] == "look around"


def test_missing_key_is_a_clear_error_before_the_run(provider, monkeypatch, tmp_path):
    from agent.factory import AgentConfigError, make_actor

    monkeypatch.delenv(f"{provider.upper()}_API_KEY")
    monkeypatch.delenv(f"{provider.upper()}_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env here
    with pytest.raises(AgentConfigError, match=f"{provider.upper()}_API_KEY"):
        make_actor(None, model=f"{provider}/some-model")


def test_token_budget_with_real_usage(provider, monkeypatch, tiny_task, tmp_path):
    with StubLLM([{"text": react("List Files", {"dir_path": "."}), "usage": [5000, 100, 0]}] * 3) as stub:
        model = connect(monkeypatch, provider, stub)
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model,
                               budgets=Budgets(max_tokens=9000))
    assert meta.status == "max_tokens" and len(run.steps()) == 2 and len(stub.requests) == 2


def test_the_repeated_prefix_is_marked_for_anthropic_and_plain_for_openai(provider, monkeypatch, tiny_task,
                                                                           tmp_path):
    replies = [react("List Files", {"dir_path": "."}, thought=f"look {i}") for i in range(4)]
    with StubLLM([{"text": r} for r in replies + [react("Final Answer", {"final_answer": "ok"})]]) as stub:
        model = connect(monkeypatch, provider, stub)
        _, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "finished"
    bodies = [r["body"] for r in stub.requests]
    if provider == "openai":  # its prefix cache is automatic: nothing but role and content is sent
        assert all(set(m) == {"role", "content"} for b in bodies for m in b["messages"])
        return
    previous, current = (b["messages"][-1]["content"] for b in bodies[3:5])
    marked = [i for i, block in enumerate(previous) if "cache_control" in block]
    assert len(marked) == 1 and current[-1].get("cache_control") is None
    cached = "".join(block["text"] for block in previous[:marked[0] + 1])
    assert previous[marked[0] + 1]["text"].startswith("Step 3: List Files\n")  # the prefix ends before the latest step
    # the next request has a block boundary where that prefix ends, so Anthropic reads it back
    ends = {len("".join(block["text"] for block in current[:k])) for k in range(1, len(current) + 1)}
    assert "".join(block["text"] for block in current).startswith(cached) and len(cached) in ends
