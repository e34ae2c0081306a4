"""Run records: replayed episodes, snapshots, torn traces, kill -9 then resume, scoring."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.replay import ReplayActor, load_actions
from agent.runner import Budgets, create_run, drive
from environments.record.runs import RunDir
from environments.scoring.reference_check import check_reference
from environments.scoring.score import score_run
from environments.task.spec import load_task

ACTIONS = [
    {"action": "List Files", "args": {"dir_path": "."}},
    {"action": "Write File", "args": {"file_name": "train.py",
                                      "content": "open('result.txt','w').write('42')\n"}},
    {"action": "Execute Script", "args": {"script_name": "train.py"}},
    {"action": "Write File", "args": {"file_name": "notes/plan.md", "content": "more later"}},
    {"action": "Final Answer", "args": {"final_answer": "wrote 42"}},
]


def write_actions(path: Path, actions=ACTIONS) -> Path:
    path.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return path


def test_replayed_episode_records_trace_snapshots_and_scores(tiny_task, tmp_path):
    actor = ReplayActor.from_file(write_actions(tmp_path / "a.jsonl"))
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local")
    meta = drive(run, task, actor)
    assert meta.status == "finished" and meta.final_answer == "wrote 42"
    steps = RunDir.open(run.path).steps()
    assert [s.action for s in steps] == [a["action"] for a in ACTIONS]
    assert steps[2].exit_code == 0 and steps[2].changed == ["result.txt"]
    assert steps[1].changed == ["train.py"]
    # any step's workspace can be rebuilt
    restored = tmp_path / "at-step-2"
    run.restore(2, restored)
    assert (restored / "train.py").read_text().startswith("open('result.txt'")
    assert not (restored / "result.txt").exists()
    run.restore(0, restored)
    assert "nums" in (restored / "train.py").read_text()
    score = score_run(run, task, sandbox="local")
    assert score.value == 42.0 and score.baseline == 6.0 and score.success
    assert json.loads((run.path / "score.json").read_text())["value"] == 42.0


def test_unchanged_files_are_stored_once(tiny_task, tmp_path):
    big = tiny_task / "env" / "big.bin"
    big.write_bytes(os.urandom(2_000_000))
    actions = [{"action": "Write File", "args": {"file_name": "a.txt", "content": str(i)}}
               for i in range(10)]
    actor = ReplayActor.from_file(write_actions(tmp_path / "a.jsonl", actions))
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local")
    drive(run, task, actor)
    objects = sum(p.stat().st_size for p in (run.path / "snapshots" / "objects").rglob("*") if p.is_file())
    assert objects < 100_000  # the 2 MB file equals the task's env copy: referenced, not stored


def test_budget_ends_the_run_cleanly(tiny_task, tmp_path):
    actor = ReplayActor.from_file(write_actions(tmp_path / "a.jsonl"))
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local",
                           budgets=Budgets(max_steps=2))
    meta = drive(run, task, actor)
    assert meta.status == "max_steps" and len(run.steps()) == 2


def test_torn_trace_line_is_trimmed_on_load(tiny_task, tmp_path):
    actor = ReplayActor.from_file(write_actions(tmp_path / "a.jsonl", ACTIONS[:2]))
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local")
    drive(run, task, actor)
    with run.trace_path.open("a") as f:
        f.write('{"index": 3, "actor": "rep')
    assert len(RunDir.open(run.path).steps()) == 2
    assert run.trace_path.read_text().endswith("}\n")


def test_bad_actions_file_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"action": "List Files", "args": {"dir_path": "."}}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        load_actions(path)


def test_kill_9_mid_run_then_resume_and_score(tiny_task, tmp_path):
    actions = [
        {"action": "Write File", "args": {"file_name": "slow.py",
                                          "content": "import time\nfor i in range(3):\n"
                                                     "    print(i, flush=True); time.sleep(1)\n"
                                                     "open('result.txt','w').write('99')\n"}},
        {"action": "Execute Script", "args": {"script_name": "train.py"}},
        {"action": "Execute Script", "args": {"script_name": "slow.py"}},
        {"action": "Execute Script", "args": {"script_name": "slow.py"}},
        {"action": "Final Answer", "args": {"final_answer": "99"}},
    ]
    actions_file = write_actions(tmp_path / "a.jsonl", actions)
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "tui.cli", "run", str(tiny_task), "--actions", str(actions_file),
           "--runs-dir", str(runs), "--sandbox", "local", "--no-score"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, cwd=Path(__file__).parents[2])
    deadline = time.time() + 120
    trace = None
    while time.time() < deadline:
        found = list(runs.glob("*/trace.jsonl")) if runs.exists() else []
        if found and len(found[0].read_text().splitlines()) >= 3:
            trace = found[0]
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert trace is not None, "the run never reached its third step"
    run = RunDir.open(trace.parent)
    done = len(run.steps())
    assert 3 <= done < len(actions)
    assert run.meta.status == "running"
    # the killed run can be scored as it stands, then resumed to its end
    assert score_run(run, run.task(), sandbox="local").value == 99.0
    resumed = subprocess.run(
        [sys.executable, "-m", "tui.cli", "run", "--resume", str(run.path), "--actions",
         str(actions_file), "--json"],
        capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=180,
    )
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["status"] == "finished" and result["score"]["value"] == 99.0
    steps = RunDir.open(run.path).steps()
    assert [s.index for s in steps] == list(range(1, len(actions) + 1))
    assert steps[-1].action == "Final Answer"


def test_check_task_passes_a_good_reference_and_fails_a_bad_one(tiny_task):
    task = load_task(tiny_task)
    good = check_reference(task, sandbox="local")
    assert good.passed and good.reference == 60.0 and good.baseline == 6.0
    (tiny_task / "reference" / "train.py").write_text("open('result.txt','w').write('6.1')\n")
    bad = check_reference(load_task(tiny_task), sandbox="local")
    assert not bad.passed and bad.improvement < 0.10
