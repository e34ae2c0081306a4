"""Every way a server fails, through the real openai and anthropic SDKs and the loopback stub.

Each case starts with one good step (List Files), then the fault. A transient fault is retried
and the run goes on to its Final Answer; a lasting one ends the run with status ``error``, a
one-line reason, the first step still in the trace and the failed call in the call log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from environments.record.runs import RunDir
from tests.agent.helpers import episode, react
from tests.agent.stub_llm import StubLLM, connect

FIRST = {"text": react("List Files", {"dir_path": "."})}
DONE = {"text": react("Final Answer", {"final_answer": "done"})}
TRUNCATED = {"raw": '{"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"role": "assi'}
HTML = {"raw": "<html><body><h1>502 Bad Gateway</h1></body></html>", "content_type": "text/html"}


def _no_choices(provider: str) -> dict:
    if provider == "openai":
        return {"payload": {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                            "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 0}}}
    return {"payload": {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [],
                        "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 0}}}


@dataclass
class Fault:
    """A fault the server sends ``times`` times after the first good step."""

    name: str
    behaviour: dict | None = None  # None: per provider, from _no_choices
    recovers: bool = True
    times: int = 1
    reason: str = ""  # a word the run's status_reason holds when the run ends in error
    options: str = ""  # model-string options
    retried: bool = True
    at_most: int = 0  # where the deadline, not the retry count, bounds the requests


FAULTS = [
    Fault("truncated_json", TRUNCATED),
    Fault("empty_body", {"raw": ""}),
    Fault("html_body", HTML),
    Fault("garbage_content_type", {"raw": b"\x00\xff\xfe garbage \x81", "content_type": "application/x-garbage"}),
    Fault("json_not_an_object", {"raw": "[1, 2, 3]"}),
    Fault("wrong_shape", {"payload": {"detail": "overloaded, try later"}}),
    Fault("no_choices_or_blocks", None),
    Fault("status_429_retry_after", {"status": 429, "headers": {"retry-after": "0.05"}}),
    Fault("status_429_no_retry_after", {"status": 429}),
    Fault("status_500", {"status": 500}),
    Fault("status_503_retry_after_ms", {"status": 503, "headers": {"retry-after-ms": "30"}}),
    Fault("connection_reset", {"reset": True}),
    Fault("hung_server", {"hang": 30}, options="?timeout=0.5"),
    Fault("no_usage", {"text": react("Final Answer", {"final_answer": "done"}), "usage": None}, retried=False),
    Fault("lone_surrogate", {"text": react("Final Answer", {"final_answer": "done \ud800 ok"}, thought="x\udc00y")},
          retried=False),
    # lasting faults: the run ends with error
    Fault("unauthorized_401", {"status": 401}, recovers=False, reason="AuthenticationError", retried=False),
    Fault("lasting_500", {"status": 500}, recovers=False, times=3, reason="InternalServerError"),
    Fault("lasting_truncated_json", TRUNCATED, recovers=False, times=3, reason="malformed"),
    Fault("lasting_html", HTML, recovers=False, times=3, reason="malformed"),
    Fault("retry_after_past_the_deadline", {"status": 429, "headers": {"retry-after": "3600"}},
          recovers=False, reason="retry-after", options="?deadline=5", retried=False),
    Fault("hang_past_the_deadline", {"hang": 30}, recovers=False, times=12, reason="deadline",
          options="?timeout=0.4&max_retries=10&deadline=1.5", at_most=5),
]


def _calls(run) -> list[dict]:
    return [json.loads(line) for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_fault(fault: Fault, provider, monkeypatch, tiny_task, tmp_path):
    bad = fault.behaviour if fault.behaviour is not None else _no_choices(provider)
    rest = [] if bad.get("text") else [DONE]
    behaviours = [FIRST] + [bad] * fault.times + (rest if fault.recovers else [])
    with StubLLM(behaviours, max_requests=len(behaviours)) as stub:
        model = connect(monkeypatch, provider, stub) + fault.options
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
        requests = len(stub.requests)
    steps = RunDir.open(run.path).steps()  # the trace loads
    calls = _calls(run)
    if fault.recovers:
        assert meta.status == "finished", meta.status_reason
        assert meta.final_answer.startswith("done")
        assert [s.action for s in steps] == ["List Files", "Final Answer"]
        assert meta.totals.retries == (1 if fault.retried else 0)
        assert requests == len(behaviours)
        assert all(c["error"] is None for c in calls) and len(calls) == 2
        assert all(c["usage"]["input"] > 0 for c in calls)  # counted, or estimated where missing
    else:
        assert meta.status == "error"
        reason = meta.status_reason
        assert "\n" not in reason and len(reason) < 400 and fault.reason.lower() in reason.lower(), reason
        assert [s.action for s in steps] == ["List Files"]  # the trace is intact
        assert calls[-1]["error"] and calls[-1]["reply"] is None
        if fault.at_most:
            assert 2 <= requests - 1 <= fault.at_most
        else:
            assert requests == 1 + (fault.times if fault.retried else 1)


def test_missing_usage_is_estimated_and_marked(provider, monkeypatch, tiny_task, tmp_path):
    with StubLLM([{"text": react("Final Answer", {"final_answer": "x" * 400}), "usage": None}]) as stub:
        model = connect(monkeypatch, provider, stub)
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    (call,) = _calls(run)
    assert call["usage"]["estimated"] is True and call["usage"]["output"] >= 100
    assert meta.totals.tokens_in == call["usage"]["input"] > 100  # the prompt, estimated


def test_lone_surrogates_become_replacement_characters(provider, monkeypatch, tiny_task, tmp_path):
    text = react("Final Answer", {"final_answer": "a\ud800b"}, thought="t\udfffu")
    with StubLLM([{"text": text}]) as stub:
        model = connect(monkeypatch, provider, stub)
        run, _, meta = episode(tiny_task, tmp_path, model, fast_model=model)
    assert meta.status == "finished" and meta.final_answer == "a\ufffdb"
    (step,) = RunDir.open(run.path).steps()
    assert step.meta["fields"]["Thought"] == "t\ufffdu"
    assert "\\ufffd" in (run.path / "llm" / "calls.jsonl").read_text()


def test_timeouts_and_retries_come_from_env_and_options(monkeypatch):
    from agent.models.policy import CallPolicy

    monkeypatch.setenv("LABCOAT_LLM_TIMEOUT", "33")
    monkeypatch.setenv("LABCOAT_LLM_RETRIES", "7")
    monkeypatch.setenv("LABCOAT_LLM_DEADLINE", "99")
    opts = {"timeout": 5, "temperature": 0}
    p = CallPolicy.from_env(opts)
    assert (p.timeout, p.max_retries, p.deadline) == (5.0, 7, 99.0) and opts == {"temperature": 0}
    monkeypatch.delenv("LABCOAT_LLM_TIMEOUT")
    monkeypatch.delenv("LABCOAT_LLM_RETRIES")
    monkeypatch.delenv("LABCOAT_LLM_DEADLINE")
    d = CallPolicy.from_env({})
    assert d.timeout * (d.max_retries + 1) > d.deadline  # the total bounds a hung server
    with pytest.raises(ValueError):
        CallPolicy.from_env({"timeout": -1})
