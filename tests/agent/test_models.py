"""Model strings, the price table, scripted replies and the redacting call log."""

from __future__ import annotations

import json

import pytest

from agent.calllog import Meter
from agent.models import (
    ModelConfigError,
    Usage,
    cost_of,
    make_model,
    price_of,
)
from agent.models.providers import (
    PRICES,
    PROVIDERS,
    ModelRef,
    default_fast,
    first_keyed_default,
    key_vars,
)
from agent.models.scripted import ScriptedModel
from agent.replay import ReplayActor
from agent.runner import create_run


def _parts(spec):
    ref = ModelRef.parse(spec)
    return ref.provider, ref.name, dict(ref.options)


def test_parse_model_strings():
    assert _parts("openai/gpt-4o") == ("openai", "gpt-4o", {})
    assert _parts("openai/qwen/qwen3-8b?temperature=0&max_retries=1") == (
        "openai", "qwen/qwen3-8b", {"temperature": 0, "max_retries": 1})
    assert _parts("langchain/pkg.mod:Chat?model=m&streaming=false") == (
        "langchain", "pkg.mod:Chat", {"model": "m", "streaming": False})
    for bad in ("gpt-4o", "mistral/large", "openai/", "openai/?seed=1"):
        with pytest.raises(ModelConfigError):
            ModelRef.parse(bad)
    ref = ModelRef.parse("llamacpp/x.gguf?n_ctx=2048")
    assert ref.spec == "llamacpp/x.gguf?n_ctx=2048" and ref.base == "llamacpp/x.gguf"
    assert ref.with_option("seed", 3).spec == "llamacpp/x.gguf?n_ctx=2048&seed=3"
    assert ref.with_option("n_ctx", 9) is ref  # what the string says wins
    with pytest.raises(ModelConfigError, match="no-LLM agent"):
        make_model("baseline/hparam")


def test_every_provider_is_one_row_of_the_table(monkeypatch):
    """A provider's facts are read from its row: key variable, default and fast models, seed."""
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert key_vars() == {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
    assert first_keyed_default() is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    assert first_keyed_default() == ("openai/gpt-4o", "openai/gpt-4o-mini")
    assert default_fast("openai/gpt-4o?temperature=0") == "openai/gpt-4o-mini?temperature=0"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert default_fast("openai/qwen3") == "openai/qwen3"  # a server with its own model list
    assert default_fast("langchain/m:C") == "langchain/m:C"  # no fast model: the main one
    assert {p for p, row in PROVIDERS.items() if row.seeded} == {"openai", "llamacpp", "scripted"}
    assert all(k.startswith(tuple(f"{p}/" for p in PROVIDERS)) for k in PRICES)


def test_prices_longest_prefix_and_user_table(tmp_path, monkeypatch):
    assert price_of("openai/gpt-4o-mini-2024") == (0.15, 0.60, 0.075)
    assert price_of("openai/gpt-4o-2024-08-06") == (2.50, 10.00, 1.25)
    assert price_of("openai/unknown") is None and cost_of("openai/unknown", Usage(input=10)) == 0.0
    u = Usage(input=1_000_000, output=100_000, cached=400_000)
    assert cost_of("anthropic/claude-sonnet-4-5", u) == pytest.approx(0.6 * 3 + 0.4 * 0.3 + 0.1 * 15)
    (tmp_path / "prices.toml").write_text('["openai/my-vllm"]\ninput = 1.0\noutput = 2.0\n')
    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path))
    assert cost_of("openai/my-vllm-7b", Usage(input=1_000_000, output=500_000)) == pytest.approx(2.0)
    (tmp_path / "prices.toml").write_text('["openai/x"]\ninput = 1.0\n')
    with pytest.raises(ModelConfigError, match="needs input and output"):
        price_of("openai/x")


def test_scripted_jsonl_with_tool_calls_and_call_log_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"content": "a", "tool_calls": [{"name": "List_Files", "arguments": {"dir_path": "."}}]})
                    + "\n# a comment\n" + json.dumps({"call": 2, "reply": "b", "usage": {}}) + "\n")
    m = ScriptedModel(path)
    r1 = m.complete([{"role": "user", "content": "x" * 400}])
    assert r1.text == "a" and r1.tool_calls[0].name == "List_Files" and r1.usage.input == 100
    assert m.complete([]).text == "b"
    (tmp_path / "bad.jsonl").write_text('{"text": 1}\n')
    with pytest.raises(ModelConfigError, match="bad.jsonl:1"):
        ScriptedModel(tmp_path / "bad.jsonl")


def test_one_scripted_file_is_shared_between_roles(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("one\n---8<---\ntwo\n")
    shared: dict = {}
    a, b = make_model(f"scripted/{path}", shared=shared), make_model(f"scripted/{path}", shared=shared)
    assert a is b and a.complete([]).text == "one" and b.complete([]).text == "two"


def test_call_log_redacts_secrets(tiny_task, tmp_path, monkeypatch):
    secret = "sk-very-secret-value-42"
    monkeypatch.setenv("SOME_SERVICE_TOKEN", secret)
    (tmp_path / "r.txt").write_text(f"the key is {secret}\n")
    run, _ = create_run(tiny_task, ReplayActor([]), tmp_path / "runs", sandbox="local")
    meter = Meter(run)
    reply = meter.call(make_model(f"scripted/{tmp_path / 'r.txt'}"),
                       [{"role": "user", "content": f"use {secret}"}], role="agent")
    assert secret in reply.text  # the agent sees what the model said ...
    logged = (run.path / "llm" / "calls.jsonl").read_text()
    assert secret not in logged and "***" in logged  # ... the log never holds it
    assert run.meta.totals.llm_calls == 1 and run.meta.totals.tokens_in > 0
