"""One rule says which environment variables are credentials: the sandbox's env scrub and the
call log's redaction must agree, or a secret the sandbox hides still lands in ``calls.jsonl``."""

from __future__ import annotations

import pytest

from agent.calllog import Meter
from agent.models import make_model
from agent.replay import ReplayActor
from agent.runner import create_run
from sandbox.base import clean_env

NAMES = ["DB_PASSWD", "X_AUTH", "SOME_SERVICE_TOKEN", "OPENAI_API_KEY", "my_password"]


@pytest.mark.parametrize("name", NAMES)
def test_a_credential_name_is_scrubbed_by_the_sandbox_and_the_call_log(
        name, tiny_task, tmp_path, monkeypatch):
    secret = f"value-of-{name.lower()}-1234"
    monkeypatch.setenv(name, secret)

    env = clean_env({name: secret, "HARMLESS": "kept"}, cpus=1, pythonpath="")
    assert name not in env and env["HARMLESS"] == "kept"  # the sandbox drops it ...

    (tmp_path / "r.txt").write_text(f"the secret is {secret}\n")
    run, _ = create_run(tiny_task, ReplayActor([]), tmp_path / "runs", sandbox="local")
    Meter(run).call(make_model(f"scripted/{tmp_path / 'r.txt'}"),
                    [{"role": "user", "content": f"use {secret}"}], role="agent")
    logged = (run.path / "llm" / "calls.jsonl").read_text()
    assert secret not in logged and "***" in logged  # ... and the call log redacts it
