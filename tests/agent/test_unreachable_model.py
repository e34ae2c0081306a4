"""A model nobody answers for is the machine's failure, not the model's: a run whose model could not
be reached (connection refused on every try) ends ``error`` with ``infrastructure`` set, is not
scored as the model's ``no_submission`` (no eval runs, no traceback is printed) and reports count it
among the infrastructure failures, apart from the model's own."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from environments.record.runs import RunDir
from environments.scoring.score import Score
from tests.agent.stub_llm import KEY
from tui.cli import app


def _port_nobody_listens_on() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on leaving: a connection to it is refused


@pytest.fixture
def unreachable(monkeypatch, tmp_path) -> str:
    monkeypatch.chdir(tmp_path)  # no .env file here
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{_port_nobody_listens_on()}/v1")
    monkeypatch.setenv("LABCOAT_LLM_RETRIES", "1")
    monkeypatch.setenv("LABCOAT_LLM_BACKOFF", "0.01")
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai/stub-model"]\ninput = 2.0\noutput = 10.0\ncached = 1.0\n')
    monkeypatch.setenv("LABCOAT_PRICES", str(prices))
    return "openai/stub-model"


def test_an_unreachable_model_is_an_infrastructure_failure_not_scored_as_the_model_s(
        unreachable, tiny_task, tmp_path):
    runs = tmp_path / "runs"
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--model", unreachable, "--sandbox", "local",
                                   "--runs-dir", str(runs)])
    out = res.output
    assert res.exit_code == 1, out
    assert "Connection" in out and "tries" in out, out  # the reason is still said
    assert "no_submission" not in out and "Traceback" not in out and "eval.py" not in out, out
    assert "infrastructure" in out, out
    (path,) = [p.parent for p in runs.rglob("run.json")]
    meta = RunDir.open(path).meta
    assert meta.status == "error" and meta.infrastructure, meta.status_reason
    score = Score.model_validate_json((path / "score.json").read_text())
    assert score.failure == "infrastructure" and score.value is None and score.eval_seconds == 0

    report = CliRunner().invoke(app, ["report", "runs", str(runs), "--json"])
    assert report.exit_code == 0, report.output
    got = json.loads(report.stdout)
    (row,) = got["rows"] if isinstance(got, dict) else got
    assert row["infrastructure_failures"] == 1 and "no_submission" not in row["failures"], row
    wide = CliRunner().invoke(app, ["report", "runs", str(runs), "--wide"], terminal_width=240)
    (row_line,) = [line for line in wide.output.splitlines() if "openai/stub-model" in line]
    cells = [c.strip() for c in row_line.strip("│ ").split("│")]
    assert cells[-2:] == ["0", "1"], wide.output  # failures 0, infra failures 1
