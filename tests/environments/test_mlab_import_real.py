"""``labcoat import mlab`` on logs written by MLAgentBench's own runner (issue 41).

The logs under ``mlab_logs/logs/`` were made by MLAgentBench's ``runner.py`` with only its LLM
stubbed (``mlab_logs/make.py`` says how); no test needs MLAgentBench. What is checked is what
MLAgentBench records besides the trace: the run's arguments (``LOG_DIR/log``'s ``Namespace``
line, ``agent_log/agent_*.json``'s ``args``), how it ended, its timestamps, its undo store.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from environments.imports.mlab import MlabImportError, import_log
from environments.record.backups import BackupEvent, stacks_at
from environments.record.runs import RunDir

HERE = Path(__file__).parent / "mlab_logs"
LOGS = HERE / "logs"
TASK = HERE / "price-task"


def _trace(name: str) -> dict:
    return json.loads((LOGS / name / "env_log" / "trace.json").read_text())


def imported(name: str, tmp_path: Path, task: str | None = str(TASK)) -> RunDir:
    out = import_log(LOGS / name, tmp_path / "runs", task_ref=task)
    assert out.status == "imported", out
    return RunDir.open(out.run_dir)


def test_the_runs_arguments_come_from_the_log_folder(tmp_path):
    agent = imported("agent", tmp_path)  # baseline.sh's Agent: no agent_log/agent_*.json, no LLM
    assert agent.meta.actor == "mlab/Agent" and agent.meta.model is None
    assert agent.meta.budgets.max_steps == 50 and agent.meta.budgets.max_time == 18000
    research = imported("research", tmp_path)
    meta = research.meta
    assert meta.actor == "mlab/ResearchAgent" and meta.model == "mlab/claude-2.1"
    assert meta.config.model_dump()["edit_model"] == "mlab/gpt-4-0613"
    assert meta.budgets.max_steps == 10
    record = json.loads((research.path / "mlab.json").read_text())
    assert record["args"]["llm_name"] == "claude-2.1" and record["args_from"][0] == "log"
    assert record["final_message"] == "Finished due to env.is_final() == True"


def test_the_agents_saved_state_gives_the_arguments_when_the_log_is_gone(tmp_path):
    log = tmp_path / "copy"
    shutil.copytree(LOGS / "max-steps", log)
    (log / "log").unlink()
    run = imported_from(log, tmp_path)
    assert run.meta.model == "mlab/gpt-4-0125-preview" and run.meta.budgets.max_steps == 2


def imported_from(log: Path, tmp_path: Path) -> RunDir:
    out = import_log(log, tmp_path / "runs", task_ref=str(TASK))
    assert out.status == "imported", out
    return RunDir.open(out.run_dir)


def test_how_the_run_ended_is_mlagentbenchs(tmp_path):
    statuses = {name: imported(name, tmp_path).meta for name in ("agent", "max-steps", "max-time")}
    assert statuses["agent"].status == "finished"
    assert statuses["agent"].final_answer == "Done!"  # Action("Final Answer", "Done!")
    assert statuses["max-steps"].status == "max_steps" and "--max-steps" in statuses["max-steps"].status_reason
    assert statuses["max-time"].status == "max_time" and "--max-time" in statuses["max-time"].status_reason


def test_step_seconds_and_times_are_the_logs(tmp_path):
    from environments.imports.mlab import _time

    run = imported("max-time", tmp_path)
    steps = run.steps()
    trace = _trace("max-time")["steps"]
    assert steps[1].seconds == pytest.approx(trace[1]["timestamp"] - trace[0]["timestamp"], abs=1e-3)
    assert steps[0].seconds > 1.0  # its Edit Script (AI) took 1.1 s (make.py)
    assert steps[0].seconds + steps[1].seconds == pytest.approx(3.0, abs=0.2)  # the 3 s limit
    assert run.meta.finished_at == _time(trace[-1]["timestamp"])  # not the import's time
    assert run.meta.created_at <= steps[0].time


def test_a_suite_task_with_another_research_problem_is_refused_naming_both(tmp_path):
    with pytest.raises(MlabImportError, match=r"'price-task'.*Predict SalePrice for the three.*"
                       r"'house-price' is another task"):
        import_log(LOGS / "research", tmp_path / "runs", task_ref="house-price")
    log = tmp_path / "hp"  # the runner was given --task house-price (MLAgentBench's own)
    shutil.copytree(LOGS / "agent", log)
    (log / "log").write_text((log / "log").read_text().replace("task='price-task'", "task='house-price'"))
    with pytest.raises(MlabImportError, match=r"MLAgentBench's 'house-price'.*another task.*"
                       r"MLAgentBench/benchmarks/house-price"):
        import_log(log, tmp_path / "runs")
    assert not (tmp_path / "runs").exists() or not [p for p in (tmp_path / "runs").iterdir()
                                                    if not p.name.startswith(".")]


def test_mlagentbenchs_undo_store_becomes_the_runs_backups(tmp_path):
    from agent.config import ActorConfig
    from agent.fork import fork_run
    from agent.human import HumanActor

    run = imported("undo", tmp_path)  # Edit, Edit, Undo Edit Script, Final Answer
    for k in range(1, 5):
        run.restore(k, tmp_path / f"s{k}")
        assert not (tmp_path / f"s{k}" / "backup").exists(), k  # not a workspace file
    events = [json.loads(line) for line in (run.backups_dir / "log.jsonl").read_text().splitlines()]
    assert [(e["op"], e["path"], e["step"]) for e in events] == [
        ("push", "train.py", 1), ("push", "train.py", 2), ("pop", "train.py", 3)]
    assert len(stacks_at([BackupEvent.model_validate(e) for e in events], 2)["train.py"]) == 2
    child, _ = fork_run(run, 2, HumanActor(), config=ActorConfig(kind="human"), sandbox="local")
    assert json.loads((child.backups_dir / "inherited.json").read_text())["files"] == {"train.py": 2}
    assert not (child.workspace / "backup").exists()


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_resume_of_an_imported_run_is_refused_and_a_fork_names_its_actor(tmp_path):
    from typer.testing import CliRunner

    from agent import session
    from agent.fork import ForkError, fork_config
    from tui.cli.main import app

    run = imported("agent", tmp_path)  # baseline.sh's Agent: no model, so resume once used labcoat's
    before = _tree_bytes(run.path)
    with pytest.raises(ValueError, match=rf"labcoat run --fork {run.path} --at 1 --model"):
        session.resume(run.path)
    result = CliRunner().invoke(app, ["run", "--resume", str(run.path), "--sandbox", "local", "--no-score"])
    assert result.exit_code == 2 and "--fork" in result.output, result.output
    assert _tree_bytes(run.path) == before  # not a byte of the record changed
    with pytest.raises(ForkError, match="MLAgentBench's run.*name the actor"):
        fork_config(run, {})
    config, budgets = fork_config(run, {"model": "baseline/hparam"})
    begun = session.fork(run, 1, config, budgets, tmp_path / "forks", sandbox="local")
    assert begun.run.meta.actor == "baseline" and begun.run.meta.model == "baseline/hparam"
    assert begun.run.meta.fork.parent and not (begun.run.path / "mlab.json").exists()


def test_the_command_line_counts_what_it_did_and_points_at_import(tmp_path):
    from typer.testing import CliRunner

    from tui.cli.main import app

    argv = ["import", "mlab", str(LOGS / "agent"), "--task", str(TASK), "--runs-dir",
            str(tmp_path / "runs"), "--sandbox", "local"]
    first = CliRunner().invoke(app, argv)
    assert "1 log: 1 imported;" in first.output, first.output
    again = CliRunner().invoke(app, argv)
    assert "1 log: 0 imported, 1 imported before;" in again.output, again.output
    score = CliRunner().invoke(app, ["score", str(LOGS)])
    assert score.exit_code == 2 and "labcoat import mlab" in score.output, score.output


@pytest.mark.parametrize("flag, said", [
    ("--llm-name", "--model PROVIDER/MODEL"), ("--edit-script-llm-name", "--edit-model"),
    ("--resume-step", "--at K, with --fork"), ("--interactive", "labcoat tui")])
def test_mlagentbenchs_flags_get_labcoats_names(flag, said):
    import re

    from typer.testing import CliRunner

    from tui.cli.main import app

    result = CliRunner().invoke(app, ["run", "house-price", flag, "x"])
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # out of its box
    assert result.exit_code == 2 and f"{flag} is MLAgentBench's" in text and said in text, text
    assert "--max-time" not in text  # click's nearest spelling of --llm-name


def test_mlagentbenchs_device_and_python_values_are_mapped():
    from tui.cli import mlab_flags

    assert mlab_flags.device("0") == "cuda:0" and mlab_flags.device("cpu") == "cpu"
    assert mlab_flags.python("python3") is None and mlab_flags.python("python") is None  # the sandbox's
    assert mlab_flags.python("/usr/bin/python3") == "/usr/bin/python3"


def test_the_flag_table_in_the_docs_is_the_clis():
    from tui.cli.mlab_flags import FLAGS

    doc = (Path(__file__).parents[2] / "docs" / "mlagentbench.md").read_text()
    rows = {line.split("|")[1].strip(" `") for line in doc.splitlines() if line.startswith("| `--")}
    assert rows == set(FLAGS)


def test_a_folder_named_like_a_suite_task_is_reported_apart_from_it(tmp_path):
    from environments.reports.records import load_runs
    from environments.task.suite import TASKS_DIR, apart_from_suite

    folder = tmp_path / "benchmarks" / "house-price"  # MLAgentBench's name, this log's data
    shutil.copytree(TASK, folder)
    run = imported("research", tmp_path, task=str(folder))
    assert run.meta.task == "house-price"
    [row] = load_runs(tmp_path / "runs")
    assert row.key.task == "house-price (benchmarks/house-price)"
    assert apart_from_suite("house-price", str(TASKS_DIR / "house-price")) == "house-price"
    assert apart_from_suite("price-task", str(TASK)) == "price-task"


def test_the_log_folder_is_read_as_untrusted_text(tmp_path):
    """The Namespace line is literals or nothing (never evaluated); a ``log`` or an agent state
    that is a link is not followed; the trace's own steps still import."""
    import os

    from environments.imports.mlab_record import namespace_args

    canary = tmp_path / "ran"
    assert namespace_args(f"Namespace(task=__import__('os').mkdir({str(canary)!r}))") is None
    assert namespace_args("Namespace(task='a', max_steps=3)\n") == {"task": "a", "max_steps": 3}
    assert not canary.exists()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "log").write_text("Namespace(task='price-task', llm_name='planted', agent_type='X')\n")
    log = tmp_path / "copy"
    shutil.copytree(LOGS / "max-steps", log)
    (log / "log").unlink()
    os.symlink(outside / "log", log / "log")
    for state in (log / "agent_log").glob("agent_*.json"):
        state.unlink()
        os.symlink(outside / "log", state)
    run = imported_from(log, tmp_path)
    assert run.meta.model is None and run.meta.actor == "mlab/agent"  # nothing read through a link
    assert len(run.steps()) == 2


def test_the_fork_command_for_a_run_stopped_at_its_limit_says_to_raise_it(tmp_path):
    from environments.imports.mlab import fork_command

    run = imported("max-steps", tmp_path)
    assert fork_command(run).endswith("--at 2 --model PROVIDER/MODEL (it stopped at MLAgentBench's "
                                      "limit, which a fork keeps: raise it with --max-steps N)")
