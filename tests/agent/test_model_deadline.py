"""A server cannot hold a model call past its deadline, nor flood the process or the call log.

Through the real openai and anthropic SDKs and the loopback stub: a reply dripped a byte at a
time, headers dripped, an event stream that never ends and a silent server all end the call at
its ``deadline`` (not the server's end: every read is bounded by the time left, and a call cut
there is not tried again); a reply past ``max_reply_bytes`` (declared, undeclared, or gzip that
expands) is cut off while it is read; and each line of ``llm/calls.jsonl`` is bounded. The run
ends ``error`` with a one-line reason and its first step intact. Each episode runs in a thread
joined with a timeout, so a call that is still held fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from types import SimpleNamespace

import pytest

from agent import calllog
from agent.models import ModelError, make_model
from agent.models.base import Reply
from agent.models.guard import GuardedTransport, http_client
from agent.models.policy import CallPolicy, call_with_retries
from environments.record.runs import RunDir, Totals
from tests.agent.helpers import episode, react
from tests.agent.stub_llm import StubLLM, connect

FIRST = {"text": react("List Files", {"dir_path": "."})}
DONE = {"text": react("Final Answer", {"final_answer": "done"})}
MIB = 1 << 20
HOLD = 30  # seconds a test waits for an episode before it calls the call held


def _run(tiny_task, tmp_path, model: str):
    """The episode in a thread: (run, meta, seconds), or a failure when it is still running."""
    out: dict = {}

    def go() -> None:
        try:
            out["run"], _, out["meta"] = episode(tiny_task, tmp_path, model, fast_model=model)
        except BaseException as err:  # noqa: BLE001 - shown by the assertion below
            out["error"] = err

    start = time.monotonic()
    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(HOLD)
    seconds = time.monotonic() - start
    assert not worker.is_alive(), f"the model call was still held after {HOLD} s"
    assert "error" not in out, repr(out.get("error"))
    return out["run"], out["meta"], seconds


def _calls(run) -> list[dict]:
    return [json.loads(line) for line in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]


def _ended_in_error(run, meta, word: str) -> dict:
    """The run ended ``error`` for ``word``, one line, first step intact; the failed call's log."""
    assert meta.status == "error", meta.status_reason
    reason = meta.status_reason
    assert "\n" not in reason and len(reason) < 400 and word in reason.lower(), reason
    assert [s.action for s in RunDir.open(run.path).steps()] == ["List Files"]
    last = _calls(run)[-1]
    assert last["error"] and last["reply"] is None
    return last


HOLDERS = [
    pytest.param({"drip": 0.2}, id="dripped_reply"),
    # each waits out its deadline (~1 s a provider): the fast set holds a drip and a silence
    pytest.param({"drip_headers": 0.2}, id="dripped_headers", marks=pytest.mark.slow),
    pytest.param({"sse_forever": 0.05}, id="never_ending_event_stream", marks=pytest.mark.slow),
    pytest.param({"hang": 60}, id="silent_server"),
]


@pytest.mark.parametrize("holder", HOLDERS)
def test_a_held_call_ends_at_its_deadline(holder, provider, monkeypatch, tiny_task, tmp_path):
    with StubLLM([FIRST, holder, DONE]) as stub:
        model = connect(monkeypatch, provider, stub) + "?timeout=20&deadline=1&max_retries=3"
        run, meta, _ = _run(tiny_task, tmp_path, model)
        requests, finished = len(stub.requests), stub.finished
    last = _ended_in_error(run, meta, "deadline")
    assert last["seconds"] < 10  # 1 s and a little; measured idle: about 1.0 s
    assert requests == 2 and finished == 0  # not tried again, and the server never got to its end


FLOODS = [
    pytest.param({}, id="declared"),
    pytest.param({"undeclared": True}, id="no_content_length"),
    pytest.param({"gzip": True}, id="gzip_that_expands"),
]


@pytest.mark.parametrize("flood", FLOODS)
def test_a_reply_past_the_size_cap_is_cut_off_while_read(flood, provider, monkeypatch, tiny_task, tmp_path):
    huge = {"huge": 64 * MIB, **flood}
    with StubLLM([DONE, huge, FIRST, huge]) as stub:
        spec = connect(monkeypatch, provider, stub) + f"?max_reply_bytes={MIB}"
        model = make_model(spec)
        ask = [{"role": "user", "content": "hi"}]
        model.complete(ask)  # the SDK builds its types on first use: not what is measured
        tracemalloc.start()
        try:
            start = time.monotonic()
            with pytest.raises(ModelError, match="larger than 1 MiB"):
                model.complete(ask)
            seconds = time.monotonic() - start
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        run, meta, _ = _run(tiny_task, tmp_path, spec)
        requests, sent = len(stub.requests), stub.sent
    assert seconds < 10 and peak < 16 * MIB, f"{seconds:.1f} s, {peak / MIB:.1f} MiB held"  # not the 64 MiB
    last = _ended_in_error(run, meta, "larger than")
    assert last["seconds"] < 10 and requests == 4  # cut at once, not tried again
    if not flood.get("gzip"):
        assert max(sent) < 40 * MIB  # the client stopped reading (socket buffers hold a few MiB)
    assert (run.path / "llm" / "calls.jsonl").stat().st_size < 4 * MIB


def test_call_log_lines_are_capped(provider, monkeypatch, tiny_task, tmp_path):
    """A reply under the size cap goes to the agent whole; its call-log line is cut with a marker."""
    with StubLLM([FIRST, {"huge": 3 * MIB}, DONE]) as stub:
        model = connect(monkeypatch, provider, stub)
        run, meta, _ = _run(tiny_task, tmp_path, model)
    assert meta.status == "finished", meta.status_reason  # the unusable reply got a reminder
    log = run.path / "llm" / "calls.jsonl"
    assert log.stat().st_size < 2 * MIB
    calls = _calls(run)
    assert len(calls) == 3 and all(c["error"] is None for c in calls)
    reply = calls[1]["reply"]
    assert len(reply) < MIB and "truncated" in reply and str(3 * MIB) in reply  # its whole length


def test_a_streamed_call_that_never_ends_stops_at_its_deadline(provider, monkeypatch):
    """The SDKs' own streaming (``stream=True``), read inside a guarded call, is bounded too."""
    with StubLLM([{"sse_forever": 0.05}]) as stub:
        model = make_model(connect(monkeypatch, provider, stub) + "?deadline=1.5")
        ask = [{"role": "user", "content": "hi"}]

        def attempt(timeout: float) -> Reply:
            if provider == "openai":
                stream = model.client.chat.completions.create(model="stub", messages=ask, stream=True,
                                                              timeout=timeout)
            else:
                stream = model.client.messages.create(model="stub", max_tokens=10, messages=ask,
                                                      stream=True, timeout=timeout)
            for _ in stream:
                pass
            return Reply(text="the stream ended")

        start = time.monotonic()
        with pytest.raises(ModelError, match="deadline of 1.5 s"):
            call_with_retries(model.name, model.policy, attempt)
        assert time.monotonic() - start < 10 and stub.sent[0] > 0 and stub.finished == 0


def test_every_transport_of_the_client_is_guarded(monkeypatch):
    """The default transport and a proxy's from the environment, each with bounded socket waits
    (httpx2 gives no public way to set its pool's network backend: an upgrade that moves it
    fails here, not silently)."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client = http_client()
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    assert len(transports) >= 2
    assert all(isinstance(t, GuardedTransport) and t.bounded_io for t in transports)


def test_the_reply_cap_comes_from_options_and_env(monkeypatch):
    monkeypatch.setenv("LABCOAT_LLM_MAX_REPLY_BYTES", "4096")
    assert CallPolicy.from_env({}).max_reply_bytes == 4096
    assert CallPolicy.from_env({"max_reply_bytes": 100}).max_reply_bytes == 100
    monkeypatch.delenv("LABCOAT_LLM_MAX_REPLY_BYTES")
    assert CallPolicy.from_env({}).max_reply_bytes == 8 * MIB
    with pytest.raises(ValueError):
        CallPolicy.from_env({"max_reply_bytes": 0})


def test_a_cut_never_leaves_part_of_a_key_and_a_call_stays_bounded(monkeypatch, tmp_path):
    secret = "sk-live-0123456789abcdefghij"
    monkeypatch.setenv("SOME_API_KEY", secret)
    monkeypatch.setattr(calllog, "TEXT_CHARS", 100)
    monkeypatch.setattr(calllog, "CALL_CHARS", 500)
    run = SimpleNamespace(meta=SimpleNamespace(totals=Totals()), log_dir=lambda name: tmp_path)
    meter = calllog.Meter(run)  # type: ignore[arg-type]
    reply = Reply(text="a" * 40 + secret + "b" * 200, model="m")
    messages = [{"role": "user", "content": "c" * 90} for _ in range(30)]
    meter.record("m", "agent", messages, None, reply, 1.0)
    line = (tmp_path / "calls.jsonl").read_text()
    assert secret[:6] not in line and "***" in line
    logged = json.loads(line)
    assert "268 characters in all" in logged["reply"]
    texts = [logged["reply"]] + [m["content"] for m in logged["messages"]]
    assert sum(len(t) for t in texts) < 500 + 30 * 80  # the budget, and a marker a message
