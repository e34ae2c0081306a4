"""One bad ``run.json`` never takes the workbench down: a report skips (and names) a run folder
it cannot read, a status from a newer labcoat is read as unknown, and score/resume/fork of
such a run fail with one line naming the file (exit 2, no traceback)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.record.runs import RunDir, RunReadError
from environments.reports import load_runs
from tests.environments.test_report import make_run, score
from tui.cli import app

NEWER = "paused_for_review"  # a status this version does not know


def bad_runs(root: Path) -> dict[str, Path]:
    """A good run, and run folders whose run.json is corrupt, empty, or from a newer labcoat."""
    good = make_run(root, "good", "t1", "A", final=score("t1", 12.0, 0.2, 3))
    made = {"good": good}
    for name, text in (("corrupt", '{"run_id": "corrupt", "task": '), ("empty", "")):
        (root / name).mkdir()
        (root / name / "run.json").write_text(text)
        made[name] = root / name
    newer = make_run(root, "newer", "t1", "A", seed=4, final=score("t1", 11.0, 0.1, 3))
    data = json.loads((newer / "run.json").read_text())
    (newer / "run.json").write_text(json.dumps({**data, "status": NEWER}))
    made["newer"] = newer
    return made


def test_load_runs_skips_and_names_what_it_cannot_read(tmp_path):
    made = bad_runs(tmp_path / "runs")
    skipped: list[tuple[Path, str]] = []
    runs = load_runs(tmp_path / "runs", on_skip=lambda path, why: skipped.append((path, why)))
    assert sorted(r.run_id for r in runs) == ["good", "newer"]
    assert {r.run_id: r.status for r in runs}["newer"] == f"unknown: {NEWER}"
    assert {Path(p) for p, _ in skipped} == {made["corrupt"], made["empty"]}
    for _, why in skipped:
        assert "\n" not in why and "run.json" in why


@pytest.mark.parametrize("name", ["score.json", "scores.json"])
def test_a_broken_score_file_skips_its_run_by_name(tmp_path, name):
    made = bad_runs(tmp_path / "runs")
    (made["newer"] / name).write_text('{"steps": [')
    skipped: list[str] = []
    runs = load_runs(tmp_path / "runs", on_skip=lambda _, why: skipped.append(why))
    assert [r.run_id for r in runs] == ["good"]
    assert any(why.startswith(f"{made['newer'] / name}: cannot be read") for why in skipped)


def test_report_runs_over_bad_folders_prints_the_rest(tmp_path):
    made = bad_runs(tmp_path / "runs")
    result = CliRunner().invoke(app, ["report", "runs", str(tmp_path / "runs"), "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert result.output.count("skipped") == 2, result.output
    flat = "".join(result.output.split())  # rich folds a long path over lines
    assert f"skipped{made['corrupt'] / 'run.json'}:notJSON" in flat
    assert f"skipped{made['empty'] / 'run.json'}:empty" in flat
    text = CliRunner().invoke(app, ["report", "runs", str(tmp_path / "runs")])
    assert text.exit_code == 0 and "Traceback" not in text.output


@pytest.mark.parametrize("kind", ["corrupt", "empty", "newer"])
def test_run_dir_open_says_what_is_wrong_in_one_line(tmp_path, kind):
    made = bad_runs(tmp_path / "runs")
    with pytest.raises(RunReadError) as err:
        RunDir.open(made[kind])
    message = str(err.value)
    assert "\n" not in message and str(made[kind] / "run.json") in message
    if kind == "newer":
        assert NEWER in message and "newer" in message


@pytest.mark.parametrize("kind", ["corrupt", "empty", "newer"])
@pytest.mark.parametrize("command", [["score", "{run}", "--sandbox", "local"],
                                     ["run", "--resume", "{run}"],
                                     ["run", "--fork", "{run}", "--at", "1"]])
def test_score_resume_and_fork_fail_in_one_line_naming_the_file(tmp_path, kind, command):
    made = bad_runs(tmp_path / "runs")
    argv = [a.replace("{run}", str(made[kind])) for a in command]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "validation error" not in result.output
    flat = "".join(result.output.split())  # rich folds a long path over lines
    assert str(made[kind] / "run.json") in flat


def test_report_family_names_a_broken_fork_and_shows_the_rest(tmp_path):
    made = bad_runs(tmp_path / "runs")
    line = json.dumps({"run_id": "corrupt", "path": str(made["corrupt"]), "step": 1})
    (made["good"] / "forks.jsonl").write_text(line + "\n")
    result = CliRunner().invoke(app, ["report", "family", str(made["good"]), "--json"])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    flat = "".join(result.output.split())
    assert f"skipped{made['corrupt'] / 'run.json'}:notJSON" in flat
    broken = CliRunner().invoke(app, ["report", "family", str(made["empty"])])
    assert broken.exit_code == 2 and "Traceback" not in broken.output
    assert str(made["empty"] / "run.json") in "".join(broken.output.split())


def test_tui_run_of_a_broken_run_is_one_line(tmp_path):
    made = bad_runs(tmp_path / "runs")
    result = CliRunner().invoke(app, ["tui", "--run", str(made["corrupt"])])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert str(made["corrupt"] / "run.json") in "".join(result.output.split())


def test_a_run_json_that_is_a_fifo_is_skipped_not_waited_on(tmp_path):
    made = bad_runs(tmp_path / "runs")
    (made["empty"] / "run.json").unlink()
    os.mkfifo(made["empty"] / "run.json")
    skipped: list[str] = []
    runs = load_runs(tmp_path / "runs", on_skip=lambda _, why: skipped.append(why))
    assert sorted(r.run_id for r in runs) == ["good", "newer"]
    assert any("not a regular file" in why for why in skipped)
