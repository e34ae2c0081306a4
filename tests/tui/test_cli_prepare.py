"""``labcoat prepare TASK [--again]``: where the prepared copy is and what it holds, errors as
one clear line with a non-zero exit, never a traceback."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.conftest import write_task
from tui.cli import app

STAMP = 'import os\nopen("../env/stamp.txt", "w").write(os.urandom(8).hex())\n'


def prepare(*args: str):
    return CliRunner().invoke(app, ["prepare", *args, "--sandbox", "local"])


def as_json(*args: str) -> dict:
    result = prepare(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_prepare_says_where_the_copy_is_and_again_prepares_anew(tmp_path):
    root = write_task(tmp_path / "stamped", files={"scripts/prepare.py": STAMP})
    first = prepare(str(root))
    assert first.exit_code == 0, first.output
    assert "stamped prepared (" in first.stdout and "files," in first.stdout
    assert "running stamped's scripts/prepare.py in the local sandbox" in first.stderr
    done = as_json(str(root))
    assert done["status"] == "cached" and done["source"] == str(root.resolve())
    assert done["files"] == 9 and done["bytes"] > 0  # the 7 given, the stamp, .prepared
    stamp = open(f"{done['path']}/env/stamp.txt").read()
    anew = as_json(str(root), "--again")
    assert anew["status"] == "prepared" and anew["path"] == done["path"]
    assert open(f"{anew['path']}/env/stamp.txt").read() != stamp


def test_a_task_without_prepare_py_says_so(tmp_path):
    root = write_task(tmp_path / "plain")
    result = prepare(str(root))
    assert result.exit_code == 0, result.output
    assert "has no scripts/prepare.py" in result.stdout and str(root.resolve()) in result.stdout
    assert as_json(str(root))["status"] == "no prepare.py"


def test_a_folder_mlagentbench_prepared_is_not_prepared_again(tmp_path):
    root = write_task(tmp_path / "house-price", files={
        "scripts/prepare.py": "raise SystemExit('ran again')\n", "scripts/prepared": "success"})
    done = as_json(str(root))
    assert done["status"] == "prepared by MLAgentBench" and done["path"] == str(root.resolve())
    again = prepare(str(root), "--again")
    assert again.exit_code == 1 and "already prepared this folder" in again.stderr
    assert "Traceback" not in again.output


def test_a_failing_prepare_exits_1_with_its_reason_and_no_traceback(tmp_path):
    root = write_task(tmp_path / "broken", files={
        "scripts/prepare.py": 'print("downloading")\n'})  # exits 0 having produced nothing
    result = prepare(str(root))
    assert result.exit_code == 1
    assert "error:" in result.stderr and "added or changed no file" in result.stderr
    assert "Traceback" not in result.output
    asked = write_task(tmp_path / "asks", files={"scripts/prepare.py": 'input("Consent [y/N] ")\n'})
    result = prepare(str(asked), "--json")
    assert result.exit_code == 1 and result.stdout == ""
    assert "asked for input" in " ".join(result.stderr.split())


def test_usage_errors_exit_2(tmp_path):
    unknown = prepare(str(tmp_path / "nowhere"))
    assert unknown.exit_code == 2 and "neither a suite task nor a task folder" in unknown.stderr
    root = write_task(tmp_path / "t", files={"scripts/prepare.py": STAMP})
    bad = CliRunner().invoke(app, ["prepare", str(root), "--sandbox", "nosuch"])
    assert bad.exit_code == 2 and "unknown sandbox backend" in bad.stderr
    assert "Traceback" not in unknown.output + bad.output


def test_a_misspelled_task_names_the_one_meant_and_help_names_values():
    result = prepare("digit")
    assert result.exit_code == 2 and "did you mean digits?" in result.stderr
    flags = [line for line in CliRunner().invoke(app, ["prepare", "--help"]).output.splitlines()
             if line.lstrip("│ ").startswith("--")]
    assert {f.split()[1] for f in flags} >= {"--again", "--sandbox", "--json"}
    assert not [f for f in flags if "<" in f], flags
