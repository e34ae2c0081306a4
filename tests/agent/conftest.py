"""Fixtures of the agent tests: one provider's real SDK pointed at the loopback stub server."""

from __future__ import annotations

import pytest

from tests.agent.stub_llm import KEY


@pytest.fixture(params=["openai", "anthropic"])
def provider(request, monkeypatch, tmp_path):
    """The provider's key (a fake one) and a price table; no proxy for the loopback server;
    short retry waits so fault tests stay quick (the policy is the same, only the scale)."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("LABCOAT_LLM_RETRIES", "2")
    monkeypatch.setenv("LABCOAT_LLM_TIMEOUT", "20")
    monkeypatch.setenv("LABCOAT_LLM_BACKOFF", "0.01")
    monkeypatch.delenv("LABCOAT_LLM_DEADLINE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai/stub-model"]\ninput = 2.0\noutput = 10.0\ncached = 1.0\n'
                      '["anthropic/stub-model"]\ninput = 3.0\noutput = 15.0\ncached = 0.3\n')
    monkeypatch.setenv("LABCOAT_PRICES", str(prices))
    monkeypatch.setenv(f"{request.param.upper()}_API_KEY", KEY)
    return request.param
