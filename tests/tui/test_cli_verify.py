"""``labcoat verify RUN [--json]``: exit 0 and the fields for an untampered run, exit 1 saying why
for a tampered one or one with no ledger; ``labcoat score`` shows the verdict in one line and
under ``ledger`` in its JSON. The run is ``tests/environments/test_verify.py``'s tiny task with
the three splits, made once."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from environments.record import ledger
from environments.record.runs import RunDir
from environments.reports.verify import verify_run
from tests.environments.test_verify import clone, rewrite_lines, scored_run
from tui.cli import app, common
from tui.cli.verify import print_ledger


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> RunDir:
    return scored_run(tmp_path_factory.mktemp("cli-verify"))


@pytest.fixture
def cli(monkeypatch) -> CliRunner:
    monkeypatch.setattr(common.console, "_width", 100)
    return CliRunner()


def test_an_untampered_run_verifies_with_exit_0(original, cli):
    out = cli.invoke(app, ["verify", str(original.path), "--json"])
    assert out.exit_code == 0, out.output
    v = json.loads(out.stdout)
    assert {"run", "task", "splits", "calls", "test_seen_by_agent", "ledger_intact",
            "matches_trace", "hashes_match", "head", "problems"} <= set(v)
    assert [s["name"] for s in v["splits"]] == ["search", "select", "test"]
    assert v["calls"]["search"] == {"agent": 2, "harness": 0} and v["test_seen_by_agent"] is False
    assert v["ledger_intact"] and v["matches_trace"] and v["hashes_match"] and v["problems"] == []
    assert v["ok"] is True
    human = cli.invoke(app, ["verify", str(original.path)])
    assert human.exit_code == 0
    assert "reached the agent" in human.stdout and "2 results" in human.stdout
    assert "verified: intact, test not seen by the agent" in human.stdout
    assert f"head {v['head']}" in human.stdout


def test_a_tampered_run_fails_with_exit_1_and_says_why(original, cli, tmp_path):
    run = clone(original, tmp_path)
    rewrite_lines(run / ledger.LEDGER, lambda lines: lines[:1] + lines[2:])  # a Validate line dropped
    out = cli.invoke(app, ["verify", str(run)])
    assert out.exit_code == 1
    text = " ".join(out.stdout.split())
    assert "problem: ledger line 2 says it is entry 2 after entry 0: a line was dropped, added or moved" in text
    assert "NOT verified" in text
    v = json.loads(cli.invoke(app, ["verify", str(run), "--json"]).stdout)
    assert v["ledger_intact"] is False and v["problems"]


def test_a_run_without_a_ledger_fails_saying_so(original, cli, tmp_path):
    run = clone(original, tmp_path)
    (run / ledger.LEDGER).unlink()
    out = cli.invoke(app, ["verify", str(run), "--json"])
    assert out.exit_code == 1 and "has no ledger" in json.loads(out.stdout)["problems"][0]


def test_not_a_run_is_a_usage_error(cli, tmp_path):
    out = cli.invoke(app, ["verify", str(tmp_path)])
    assert out.exit_code == 2 and "not a run directory" in out.output


def test_score_shows_the_verdict(original, cli, tmp_path):
    run = clone(original, tmp_path)
    rewrite_lines(run / ledger.LEDGER, lambda lines: lines[:1] + lines[2:])  # a Validate line dropped
    human = cli.invoke(app, ["score", str(run), "--sandbox", "local"])
    assert human.exit_code == 0  # the score stands; its ledger's verdict is said beside it
    assert "ledger: ledger line 2 says it is entry 2" in " ".join(human.stdout.split())
    [row] = json.loads(cli.invoke(app, ["score", str(run), "--json"]).stdout)
    assert row["value"] == 5.0 and row["ledger"]["ledger_intact"] is False


def test_the_verdict_line_of_a_clean_run(original):
    with common.console.capture() as said:
        print_ledger(verify_run(original.path))
    assert said.get().strip() == "ledger: intact, test not seen by the agent"
