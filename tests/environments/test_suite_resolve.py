"""Resolving TASK: a folder at hand named like a suite task is never silently shadowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.task.spec import TaskError
from environments.task.suite import TASKS_DIR, locate_task, resolve_task


def _folder_task(root: Path, name: str) -> Path:
    """A minimal MLAgentBench-shaped folder (env/, scripts/) named ``name``."""
    folder = root / name
    (folder / "env").mkdir(parents=True)
    (folder / "scripts").mkdir()
    (folder / "scripts" / "research_problem.txt").write_text("make it better")
    (folder / "scripts" / "eval.py").write_text("def get_score(submission_folder='../env'):\n    return 1.0\n")
    return folder


def test_a_suite_name_away_from_any_folder_is_the_suite_task(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert locate_task("vectorization") == TASKS_DIR / "vectorization"
    assert resolve_task("vectorization").root == (TASKS_DIR / "vectorization").resolve()


def test_a_folder_named_like_a_suite_task_is_an_error_naming_both(tmp_path, monkeypatch):
    _folder_task(tmp_path, "vectorization")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TaskError) as info:
        resolve_task("vectorization")
    message = str(info.value)
    assert "suite task" in message and "./vectorization" in message
    assert "`suite:vectorization`" in message


def test_either_is_picked_when_said(tmp_path, monkeypatch):
    folder = _folder_task(tmp_path, "vectorization")
    monkeypatch.chdir(tmp_path)
    assert resolve_task("./vectorization").root == folder.resolve()
    assert resolve_task(str(folder)).root == folder.resolve()
    assert resolve_task("suite:vectorization").root == (TASKS_DIR / "vectorization").resolve()


def test_inside_the_suite_folder_the_name_is_not_ambiguous(monkeypatch):
    monkeypatch.chdir(TASKS_DIR)  # ./vectorization *is* the suite task
    assert locate_task("vectorization") == TASKS_DIR / "vectorization"


def test_a_near_miss_names_the_task_meant(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TaskError, match="did you mean digits"):
        resolve_task("digit")
    with pytest.raises(TaskError, match="not a suite task; did you mean digits"):
        resolve_task("suite:digit")
    with pytest.raises(TaskError, match="neither a suite task nor a task folder$"):
        resolve_task("zzzzzzzz-qqq")


def test_the_cli_refuses_the_ambiguity_before_anything_starts(tmp_path, monkeypatch):
    from tui.cli.main import app

    _folder_task(tmp_path, "vectorization")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "vectorization", "--sandbox", "local",
                                      "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert "suite:vectorization" in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists()


def test_a_suite_run_reopens_its_task_from_any_folder(tmp_path, monkeypatch):
    """A run stores the folder it was prepared from, not the bare name, so a resume or a score
    from a folder holding ``./vectorization`` still finds the suite's task."""
    from agent.human import HumanActor
    from agent.runner import create_run
    from environments.record.runs import RunDir

    monkeypatch.chdir(tmp_path)
    run, _ = create_run("vectorization", HumanActor(), tmp_path / "runs", sandbox="local", agent="human")
    assert Path(run.meta.task_source).is_absolute()
    _folder_task(tmp_path, "vectorization")
    reopened = RunDir.open(run.path)
    reopened.meta.task_root = str(tmp_path / "gone")  # the prepared copy cleared since
    assert reopened.task().root == (TASKS_DIR / "vectorization").resolve()
