"""``labcoat run``: model choice, offline default, configuration errors, JSON and plain output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.agent.helpers import react, write_replies
from tui.cli import app


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env file here


def test_scripted_model_run_with_json_output(no_keys, tiny_task, tmp_path):
    model = write_replies(tmp_path / "r.txt", [react("List Files", {"dir_path": "."}),
                                               react("Final Answer", {"final_answer": "cli"})])
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--model", model, "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--max-cost", "1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["status"] == "finished" and out["final_answer"] == "cli" and out["model"] == model
    assert out["budgets"]["max_cost"] == 1.0 and out["config"]["kind"] == "research"
    assert out["totals"]["llm_calls"] == 2 and out["score"]["failure"] == "no_submission"


def test_no_model_and_no_key_runs_the_baseline_offline(no_keys, tiny_task, tmp_path):
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["agent"] == "baseline" and out["model"] == "baseline/hparam"
    assert out["status"] == "finished" and "Hyperparameter search baseline" in out["final_answer"]


def test_plain_progress_lines_when_not_a_terminal(no_keys, tiny_task, tmp_path):
    model = write_replies(tmp_path / "r.txt", [react("List Files", {"dir_path": "."}),
                                               react("Final Answer", {"final_answer": "cli"})])
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--model", model, "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--no-score"])
    assert res.exit_code == 0, res.output
    assert "step 1 List Files: data.txt" in res.output and "steps" in res.output
    assert "finished: final answer" in res.output


@pytest.mark.parametrize("args,message", [
    (["--model", "openai/gpt-4o"], "OPENAI_API_KEY"),
    (["--model", "anthropic/claude-sonnet-4-5"], "ANTHROPIC_API_KEY"),
    (["--model", "gpt-4o"], "provider/model"),
    (["--model", "scripted/nowhere.txt"], "no such replies file"),
    (["--agent", "wizard"], "--agent: Input should be 'research'"),
    (["--model", "openai/x", "--mode", "chat"], "--mode"),
])
def test_configuration_errors_stop_before_the_run(no_keys, tiny_task, tmp_path, args, message, monkeypatch):
    if "--mode" in args:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used-anywhere")
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--runs-dir", str(tmp_path / "runs"), *args])
    assert res.exit_code == 2 and message in res.output
    assert not (tmp_path / "runs").exists()


def test_dotenv_key_is_read(no_keys, tmp_path):
    import os

    from agent.factory import make_actor

    (Path.cwd() / ".env").write_text("ANTHROPIC_API_KEY=sk-ant-from-dotenv-123456\n")
    try:
        actor = make_actor(None)  # no model: a key is set, so the research agent on the default model
        assert actor.model.name == "anthropic/claude-sonnet-4-5"
        assert actor.fast.name == "anthropic/claude-haiku-4-5"
    finally:
        os.environ.pop("ANTHROPIC_API_KEY", None)


@pytest.mark.parametrize("fold", ["0", "5"])
def test_context_options_reach_the_agents_prompt(no_keys, tiny_task, tmp_path, fold):
    script = "for e in range(1, 9):\n    print(f'epoch {e}/8: loss {1 / e:.3f}')\n"
    model = write_replies(tmp_path / "r.txt", [react("Write File", {"file_name": "log.py", "content": script}),
                                               react("Execute Script", {"script_name": "log.py"}),
                                               react("Final Answer", {"final_answer": "cli"})])
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--model", model, "--sandbox", "local", "--json",
                                   "--runs-dir", str(tmp_path / "runs"), "--fold-repeats", fold, "--keep-steps", "1",
                                   "--collapse-every", "1"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["config"]["context"]["fold_repeats"] == int(fold) and out["config"]["context"]["keep_last"] == 1
    calls = (Path(out["run_dir"]) / "llm" / "calls.jsonl").read_text().splitlines()
    last = json.loads(calls[-1])["messages"][-1]["content"]
    folded = '[8 lines of the form "epoch {1..8}/8: loss {}"' in last
    assert folded == (fold == "5") and ("epoch 8/8: loss 0.125" in last) == (fold == "0")
    assert re.search(r"\nStep 1: Write File\(log.py, [^\n]*\) -> ", last)  # --keep-steps 1, --collapse-every 1: step 1 collapsed


@pytest.fixture
def no_isolation(monkeypatch):
    """A machine where neither bubblewrap nor a Docker engine can isolate anything."""
    import sandbox.docker as docker_backend
    import sandbox.local as local
    from sandbox.base import Isolation

    local.bwrap_path.cache_clear()
    monkeypatch.setattr(local.shutil, "which", lambda name: None)
    monkeypatch.setattr(local, "_bundled_bwrap", lambda: None)
    monkeypatch.setattr(docker_backend.DockerSandbox, "isolation",
                        classmethod(lambda cls: Isolation(backend="docker", available=False)))
    yield
    local.bwrap_path.cache_clear()


def test_without_isolation_nothing_runs_unless_none_is_named(no_keys, no_isolation, tiny_task,
                                                             tmp_path):
    model = write_replies(tmp_path / "r.txt", [react("Execute Script", {"script_name": "x.py"}),
                                               react("Final Answer", {"final_answer": "cli"})])
    base = ["run", str(tiny_task), "--model", model, "--runs-dir", str(tmp_path / "runs"),
            "--no-score"]
    refused = CliRunner().invoke(app, base)
    assert refused.exit_code == 2 and "--sandbox none" in refused.output, refused.output
    assert not (tmp_path / "runs").exists()
    for command in (["batch", "--tasks", str(tiny_task), "--models", model],
                    ["tui"]):
        res = CliRunner().invoke(app, command)
        assert res.exit_code == 2 and "--sandbox none" in res.output, (command, res.output)
    named = CliRunner().invoke(app, [*base, "--sandbox", "none"])
    assert named.exit_code == 0, named.output
    assert "UNISOLATED" in named.output
    (run_json,) = (tmp_path / "runs").glob("*/run.json")
    assert json.loads(run_json.read_text())["sandbox"] == "none"


def test_resume_reads_the_stored_config_and_raises_a_budget(no_keys, tiny_task, tmp_path):
    model = write_replies(tmp_path / "r.txt", [react("List Files", {"dir_path": "."})] * 3)
    runs = tmp_path / "runs"
    first = CliRunner().invoke(app, ["run", str(tiny_task), "--model", model, "--sandbox", "local",
                                     "--runs-dir", str(runs), "--max-steps", "1", "--seed", "4",
                                     "--summarize-over", "700", "--no-score", "--json"])
    assert first.exit_code == 0, first.output
    out = json.loads(first.stdout)
    assert out["status"] == "max_steps" and out["config"]["seed"] == 4
    again = CliRunner().invoke(app, ["run", "--resume", out["run_dir"], "--max-steps", "3",
                                     "--no-score", "--json"])
    assert again.exit_code == 0, again.output
    resumed = json.loads(again.stdout)
    assert resumed["budgets"]["max_steps"] == 3 and resumed["totals"]["steps"] == 3
    assert resumed["config"] == {**out["config"]}  # nothing named but the budget: all kept
    assert resumed["config"]["context"]["summarize_over"] == 700 and resumed["model"] == model


def test_progress_lines_name_the_change_and_the_final_answer_is_printed(no_keys, tiny_task, tmp_path):
    """A write's line says which value changed (against the file as the run's previous
    snapshot holds it), not its size; the run's final answer is printed at its end."""
    script = (tiny_task / "env" / "train.py").read_text()
    model = write_replies(tmp_path / "r.txt", [
        react("Write File", {"file_name": "train.py", "content": script + "EPOCHS = 12\n"}),
        react("Write File", {"file_name": "train.py", "content": script + "EPOCHS = 30\n"}),
        react("Final Answer", {"final_answer": "EPOCHS 30 made it better"})])
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--model", model, "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--no-score"],
                             env={"COLUMNS": "80"}, terminal_width=80)
    assert res.exit_code == 0, res.output
    assert "step 1 Write File: train.py: EPOCHS = 12 (" in res.output
    assert "step 2 Write File: train.py: EPOCHS 12 → 30 (" in res.output
    assert "final answer: EPOCHS 30 made it better" in res.output


def test_a_replayed_action_the_task_does_not_offer_stops_the_run_before_it_starts(no_keys, tiny_task, tmp_path):
    actions = tmp_path / "a.jsonl"
    actions.write_text('{"action": "List Files", "args": {"dir_path": "."}}\n'
                       '{"action": "Fly Away", "args": {}}\n{"action": "final answer", "args": {"final_answer": "x"}}\n')
    res = CliRunner().invoke(app, ["run", str(tiny_task), "--agent", "replay", "--actions", str(actions),
                                   "--sandbox", "local", "--runs-dir", str(tmp_path / "runs")])
    assert res.exit_code == 2 and "'Fly Away'" in res.output and "'final answer'" not in res.output
    assert not (tmp_path / "runs").exists()
    implied = CliRunner().invoke(app, ["run", str(tiny_task), "--actions", str(actions),  # replay implied
                                       "--sandbox", "local", "--runs-dir", str(tmp_path / "runs")])
    assert implied.exit_code == 2 and "'Fly Away'" in implied.output and not (tmp_path / "runs").exists()
    batch = CliRunner().invoke(app, ["batch", "--tasks", str(tiny_task), "--models", f"replay/{actions}",
                                     "--sandbox", "local", "--dir", str(tmp_path / "b")])
    assert batch.exit_code == 2 and "'Fly Away'" in batch.output and not (tmp_path / "b").exists()
