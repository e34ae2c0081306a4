"""The command line as people read it: tables at 80 columns, progress lines that say what
happened, rounded numbers, and usage errors that say what to pass."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from environments.record.runs import Step
from tests.tui.conftest import make_demo_runs
from tui.cli import app, common
from tui.cli.display import ending, step_summary


@pytest.fixture
def at80(monkeypatch):
    monkeypatch.setattr(common.console, "_width", 80)
    return CliRunner()


def _lines_fit(text: str, width: int = 80) -> None:
    too_long = [line for line in text.splitlines() if len(line) > width]
    assert not too_long, too_long


def test_tasks_at_80_columns_keep_every_name_whole(at80):
    result = at80.invoke(app, ["tasks"])
    assert result.exit_code == 0, result.output
    _lines_fit(result.output)
    names = [t["name"] for t in json.loads(at80.invoke(app, ["tasks", "--json"]).output)]
    for name in names:
        assert any(line.split()[:1] == [name] for line in result.output.splitlines()), name
    assert "--wide adds: splits, tools, summary" in " ".join(result.output.split())
    wide = at80.invoke(app, ["tasks", "--wide"]).output
    assert "summary" in wide.splitlines()[2]


def test_tasks_json_keeps_its_fields_and_lists_the_splits(at80):
    rows = json.loads(at80.invoke(app, ["tasks", "--json"]).output)
    assert set(rows[0]) == {"name", "kind", "metric", "direction", "baseline", "threshold",
                            "tools", "summary", "path", "splits", "validation_budget"}
    for row in rows:  # every suite task: search, select and test, each saying what it is
        assert list(row["splits"]) == ["search", "select", "test"], row["name"]
        assert all(s["about"] for s in row["splits"].values()), row["name"]


def test_report_at_80_columns(at80, tmp_path):
    runs, _ = make_demo_runs(tmp_path)
    result = at80.invoke(app, ["report", "runs", str(runs)])
    assert result.exit_code == 0, result.output
    _lines_fit(result.output)
    assert "scripted/demo.txt" in result.output and "baseline/hparam" in result.output
    words = result.output.split()  # the headline numbers' headers are there, never broken mid-word
    assert {"success", "improvement"} <= set(words) and "succes" not in words, result.output
    wide = at80.invoke(app, ["report", "runs", str(runs), "--wide"]).output
    assert "infra failures" in wide and "best-step improvement" in wide


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("labcoat ")


def test_score_of_a_step_the_run_does_not_have_is_a_usage_error(tmp_path):
    _, made = make_demo_runs(tmp_path)
    result = CliRunner().invoke(app, ["score", str(made[0].path), "--step", "99", "--sandbox", "local"])
    assert result.exit_code == 2 and "no step 99" in result.output


def test_batch_checks_model_strings_before_starting_anything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["batch", "--tasks", "digits", "--models",
                                      "baseline/hparam,nonsense/x", "--sandbox", "local"])
    assert result.exit_code == 2 and "nonsense/x" in result.output
    assert not (tmp_path / "runs").exists()


def test_research_agent_without_a_model_says_what_to_pass(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr("agent.models.load_env", lambda: None)
    result = CliRunner().invoke(app, ["run", "digits", "--agent", "research", "--sandbox", "local",
                                      "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--model openai/gpt-4o" in " ".join(result.output.split())


def _step(action: str, args, observation: str, exit_code=None, error=False) -> Step:
    return Step(index=3, time="t", actor="agent", action=action, args=args, observation=observation,
                exit_code=exit_code, error=error)


def test_progress_lines_say_what_happened():
    out = "The script has been executed. Here is the output:\nepoch 1\nval_acc: 0.81\nsaved model\n"
    assert step_summary(_step("Execute Script", {"script_name": "t.py"}, out, 0)) == "val_acc: 0.81"
    plain = "The script has been executed. Here is the output:\nhello\nbye\n"
    assert step_summary(_step("Execute Script", {}, plain, 0)) == "bye"
    failed = "The script exited with code 1. Here is the output:\nTraceback\nValueError: bad\n"
    assert step_summary(_step("Execute Script", {}, failed, 1, True)) == "exit 1: ValueError: bad"
    write = _step("Write File", {"file_name": "t.py", "content": "a\nb\n" * 600},
                  "File t.py written to successfully.")
    assert step_summary(write) == "t.py: 1200 lines, 2.4 kB written"


def test_an_interrupted_run_says_where_it_is_and_how_to_resume(tmp_path):
    _, made = make_demo_runs(tmp_path)
    run = made[0]
    run.meta.status, run.meta.status_reason = "interrupted", "interrupted (Ctrl-C)"
    assert f"labcoat run --resume {run.path}" in ending(run)
