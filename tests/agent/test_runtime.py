"""``--python`` and ``--device`` belong to the run: stored in run.json, used again by a resume and
by a later ``labcoat score``, whatever that later process was given (and it says so)."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from environments.record.runs import RunDir, RunMeta
from environments.task.sandboxing import DEVICE_ENV, PYTHON_ENV, Runtime, runtime_note
from tests.conftest import write_task
from tui.cli import app

PROBE = "import os, sys\nprint('DEVICE', repr(os.environ.get('CUDA_VISIBLE_DEVICES')), 'PYTHON', sys.executable)\n"
# the score is 1 only where the device flag reached the scoring sandbox (cpu hides every GPU)
EVAL = textwrap.dedent("""
    import os
    def get_score(submission_folder):
        return 1.0 if os.environ.get("CUDA_VISIBLE_DEVICES") == "" else 0.0
""")


@pytest.fixture
def clean_runtime(monkeypatch):
    """No ``--python``/``--device`` in this process to begin with, and none after: the CLI sets
    them for the process (set first, so that monkeypatch puts back their absence)."""
    for name in (PYTHON_ENV, DEVICE_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def _actions(path, n: int):
    steps = [{"action": "Write File", "args": {"file_name": "probe.py", "content": PROBE}}]
    steps += [{"action": "Execute Script", "args": {"script_name": "probe.py"}}] * n
    path.write_text("\n".join(json.dumps(s) for s in steps) + "\n")
    return path


def _invoke(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def test_a_resume_and_a_later_score_use_the_runtime_the_run_started_with(clean_runtime, monkeypatch, tmp_path):
    task = write_task(tmp_path / "task", eval_body=EVAL)
    runs = tmp_path / "runs"
    _invoke("run", str(task), "--actions", str(_actions(tmp_path / "a.jsonl", 3)), "--sandbox", "local",
            "--runs-dir", str(runs), "--max-steps", "2", "--no-score",
            "--python", sys.executable, "--device", "cpu")
    (run_dir,) = runs.iterdir()
    meta = RunMeta.model_validate_json((run_dir / "run.json").read_text())
    assert meta.runtime == Runtime(python=sys.executable, device="cpu") and meta.status == "max_steps"

    # a new process, given nothing: the resumed step still runs with the run's runtime
    monkeypatch.delenv(PYTHON_ENV, raising=False)
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    _invoke("run", "--resume", str(run_dir), "--max-steps", "4", "--no-score")
    steps = RunDir.open(run_dir).steps()
    probes = [s.observation for s in steps if s.action == "Execute Script"]
    assert len(probes) == 3 and all("DEVICE ''" in p and sys.executable in p for p in probes), probes

    # a later score in a process given nothing scores with the device the run had
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    out = json.loads(CliRunner().invoke(app, ["score", str(run_dir), "--sandbox", "local", "--json"]).stdout)
    assert out[0]["value"] == 1.0, out

    # told otherwise: it says so, and still uses the run's
    res = CliRunner().invoke(app, ["score", str(run_dir), "--sandbox", "local", "--python", "/usr/bin/python3"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "the run was started with" in said and "/usr/bin/python3" in said
    assert json.loads((run_dir / "score.json").read_text())["value"] == 1.0


def test_without_flags_no_runtime_is_recorded_and_nothing_is_said(clean_runtime, tmp_path):
    task = write_task(tmp_path / "task")
    runs = tmp_path / "runs"
    _invoke("run", str(task), "--actions", str(_actions(tmp_path / "a.jsonl", 1)), "--sandbox", "local",
            "--runs-dir", str(runs), "--no-score")
    (run_dir,) = runs.iterdir()
    assert RunDir.open(run_dir).meta.runtime == Runtime()
    assert runtime_note(Runtime(), Runtime()) is None
    assert runtime_note(Runtime(device="cpu"), Runtime()) is None  # given nothing: nothing to say


def test_run_json_written_before_budgets_had_that_name_still_loads(tmp_path):
    data = {"run_id": "r", "task": "t", "task_root": "/x", "actor": "agent", "config": {},
            "limits": {"max_steps": 7}}
    meta = RunMeta.model_validate(data)
    assert meta.budgets.max_steps == 7 and meta.runtime == Runtime()
    assert "limits" not in json.loads(meta.model_dump_json())
