"""Batches: every combination runs once, resume after a kill, retries, and the Ray executor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.batch import BatchSpec, combo_key, find_run, load_manifest, plan, run_batch
from environments.reports import build_report, load_runs

ROOT = Path(__file__).parents[2]


def actions_file(path: Path, value: int, sleep: float = 0.0) -> Path:
    script = f"import time\ntime.sleep({sleep})\nopen('result.txt','w').write('{value}')\n"
    lines = [
        {"action": "Write File", "args": {"file_name": "train.py", "content": script}},
        {"action": "Execute Script", "args": {"script_name": "train.py"}},
        {"action": "Final Answer", "args": {"final_answer": str(value)}},
    ]
    path.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    return path


def spec_for(task: Path, models: list[str], seeds: int = 1) -> BatchSpec:
    return BatchSpec(tasks=[str(task)], models=models, seeds=list(range(seeds)), sandbox="local")


def test_every_combination_runs_once_and_reports(tiny_task, tmp_path):
    good = f"replay/{actions_file(tmp_path / 'good.jsonl', 60)}"
    weak = f"replay/{actions_file(tmp_path / 'weak.jsonl', 6)}"
    batch = tmp_path / "batch"
    seen = []
    result = run_batch(batch, spec_for(tiny_task, [good, weak], seeds=2), jobs=2,
                       on_progress=lambda p: seen.append(p.model_copy()))
    assert (result.total, result.done, result.failed, result.ran) == (4, 4, 0, 4)
    assert seen[-1].done == 4 and seen[-1].pending == 0 and seen[-1].running == 0
    assert len({r.pid for r in result.results}) <= 2
    manifest = load_manifest(batch)
    assert {c.state for c in manifest.combos.values()} == {"done"}
    for key, c in manifest.combos.items():
        assert key == combo_key(c.task, c.model, c.seed)
        assert Path(c.run_dir).parent == batch / "runs" / key
        assert json.loads((Path(c.run_dir) / "run.json").read_text())["seed"] == c.seed
    rows = {r.model: r for r in build_report(load_runs(batch))}
    assert (rows[good].runs, rows[good].success_rate, rows[good].mean_improvement) == (2, 1.0, 9.0)
    assert (rows[weak].runs, rows[weak].success_rate, rows[weak].mean_improvement) == (2, 0.0, 0.0)
    again = run_batch(batch, jobs=2)  # resume: the spec comes from batch.json, nothing to do
    assert (again.ran, again.done) == (0, 4)
    with pytest.raises(ValueError, match="different spec"):
        run_batch(batch, spec_for(tiny_task, [good]))


def test_failures_are_retried_only_when_asked(tiny_task, tmp_path):
    good = f"replay/{actions_file(tmp_path / 'good.jsonl', 60)}"
    missing = f"replay/{tmp_path / 'missing.jsonl'}"
    batch = tmp_path / "batch"
    result = run_batch(batch, spec_for(tiny_task, [good, missing]))
    assert (result.done, result.failed) == (1, 1)
    bad = [r for r in result.results if not r.ok][0]
    assert "missing.jsonl" in bad.error
    rows = {r.model: r for r in build_report(load_runs(batch))}  # the lost run still counts
    assert (rows[missing].runs, rows[missing].failures, rows[missing].success_rate) == (1, {"not_run": 1}, 0.0)
    assert "--retry-failed" in result.resume_command
    assert run_batch(batch).ran == 0  # failed ones are not retried by default
    # a run that ended in error is retried from scratch, its attempt kept aside
    key = combo_key(str(tiny_task), good, 0)
    run_dir = find_run(batch, key)
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "status": "error"}))
    p = plan(batch, load_manifest(batch))
    assert sorted(p.failed_skipped) == sorted([key, combo_key(str(tiny_task), missing, 0)])
    retried = run_batch(batch, retry_failed=True)
    assert retried.ran == 2 and retried.done == 1 and retried.failed == 1
    assert find_run(batch, key).name != run_dir.name
    assert list((batch / ".retired" / key).glob("*/*/run.json"))
    assert load_manifest(batch).combos[key].attempts == 2
    # an infrastructure failure in scoring is scored again, the run itself kept
    run_dir = find_run(batch, key)
    score = json.loads((run_dir / "score.json").read_text())
    (run_dir / "score.json").write_text(json.dumps({**score, "value": None, "failure": "infrastructure"}))
    assert run_batch(batch).ran == 0
    rescored = run_batch(batch, retry_failed=True)
    assert find_run(batch, key) == run_dir
    assert json.loads((run_dir / "score.json").read_text())["value"] == 60.0
    assert rescored.done == 1


@pytest.mark.slow  # Ray start / a killed batch: seconds of waiting; the batch's logic is tested fast beside
def test_interrupted_batch_resumes(tiny_task, tmp_path):
    slow = actions_file(tmp_path / "slow.jsonl", 60, sleep=2.0)
    batch = tmp_path / "batch"
    cmd = [sys.executable, "-m", "tui.cli", "batch", "--tasks", str(tiny_task), "--models",
           f"replay/{slow}", "--seeds", "2", "--jobs", "1", "--batch-dir", str(batch),
           "--sandbox", "local"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.time() + 120
    keys = [combo_key(str(tiny_task), f"replay/{slow}", s) for s in range(2)]
    # kill -9 the whole batch once one run is scored and the next is mid-way
    while time.time() < deadline:
        runs = [find_run(batch, k) for k in keys] if batch.exists() else []
        scored = [r for r in runs if r and (r / "score.json").exists()]
        started = [r for r in runs if r and not (r / "score.json").exists()
                   and len((r / "trace.jsonl").read_text().splitlines()) >= 1]
        if scored and started:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert scored and started, proc.stderr.read().decode()[-2000:]
    finished_before = {r.name: (r / "trace.jsonl").read_text() for r in scored}
    interrupted = started[0]
    assert json.loads((interrupted / "run.json").read_text())["status"] == "running"
    p = plan(batch, load_manifest(batch))
    assert len(p.done) == len(scored) and interrupted.parent.name in p.todo
    res = subprocess.run([sys.executable, "-m", "tui.cli", "batch", "--resume", str(batch), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert out["done"] == 2 and out["ran"] == 2 - len(scored)
    for name, trace in finished_before.items():  # finished runs were not touched
        assert (next(batch.glob(f"runs/*/{name}")) / "trace.jsonl").read_text() == trace
    # the interrupted run was resumed in place: same folder, each action once
    assert find_run(batch, interrupted.parent.name) == interrupted
    steps = [json.loads(line)["action"] for line in (interrupted / "trace.jsonl").read_text().splitlines()]
    assert steps == ["Write File", "Execute Script", "Final Answer"]
    assert json.loads((interrupted / "score.json").read_text())["value"] == 60.0


@pytest.mark.slow  # Ray start / a killed batch: seconds of waiting; the batch's logic is tested fast beside
def test_ray_executor_on_a_local_instance(tiny_task, tmp_path):
    good = f"replay/{actions_file(tmp_path / 'good.jsonl', 60)}"
    batch = tmp_path / "batch"
    result = run_batch(batch, spec_for(tiny_task, [good], seeds=2), jobs=2, executor="ray")
    assert (result.done, result.failed) == (2, 0), result.results
    assert all(r.pid != os.getpid() for r in result.results)  # ran in Ray workers
    rows = build_report(load_runs(batch))
    assert rows[0].runs == 2 and rows[0].success_rate == 1.0


def test_missing_baseline_is_measured_once_before_the_runs(tmp_path):
    from environments.scoring.baselines import baseline_path
    from environments.task.spec import load_task
    from tests.conftest import write_task

    task = write_task(tmp_path / "unmeasured", toml='solve = ["train.py"]\n')
    good = f"replay/{actions_file(tmp_path / 'good.jsonl', 60)}"
    measured = []
    spec = spec_for(task, [good]).model_copy(update={"baseline_runs": 1})
    result = run_batch(tmp_path / "batch", spec, on_measure=measured.append)
    assert measured == ["unmeasured"] and result.done == 1
    assert json.loads(baseline_path(load_task(task)).read_text())["mean"] == 6.0
    assert result.results[0].improvement == 9.0 and result.results[0].success


def test_a_batch_runs_tools_mode_with_its_context_and_seeds(tiny_task, tmp_path):
    """Everything a single run can set reaches each combination's run (here tools mode, a
    context setting, a budget), and the combination's seed reaches its actor."""
    from agent.config import ActorConfig
    from agent.context import ContextSettings
    from agent.runner import Budgets
    from environments.record.runs import RunDir

    replies = tmp_path / "tools.jsonl"
    calls = [  # the scripted model answers by seed: seed 1 writes 60, seed 0 writes 6
        {"content": "", "seeds": [seed], "tool_calls": [{"name": "Write_File", "arguments": {
            "file_name": "result.txt", "content": value}}]} for seed, value in ((0, "6"), (1, "60"))]
    calls.append({"content": "", "tool_calls": [{"name": "Final_Answer", "arguments": {"final_answer": "done"}}]})
    replies.write_text("\n".join(json.dumps(c) for c in calls) + "\n")
    model = f"scripted/{replies}"
    spec = BatchSpec(tasks=[str(tiny_task)], models=[model], seeds=[0, 1], sandbox="local",
                     actor=ActorConfig(mode="tools", context=ContextSettings(keep_last=2)),
                     budgets=Budgets(max_steps=5))
    result = run_batch(tmp_path / "batch", spec)
    assert (result.done, result.failed) == (2, 0), result.results
    values = {}
    for c in load_manifest(tmp_path / "batch").combos.values():
        meta = RunDir.open(c.run_dir).meta
        config = ActorConfig.from_meta(meta)
        assert (config.kind, config.mode, config.context.keep_last, config.seed) == ("research", "tools", 2, c.seed)
        assert meta.budgets.max_steps == 5 and meta.batch == str((tmp_path / "batch").resolve())
        values[c.seed] = (Path(c.run_dir) / "workspace" / "result.txt").read_text()
    assert values == {0: "6", 1: "60"}


def test_batch_json_written_before_typed_configs_still_resumes(tiny_task, tmp_path):
    from agent.batch import BatchManifest

    good = f"replay/{actions_file(tmp_path / 'good.jsonl', 60)}"
    old = {"spec": {"tasks": [str(tiny_task)], "models": [good], "seeds": [0], "agent": None,
                    "actions": None, "sandbox": "local", "max_steps": 9, "max_time": None,
                    "max_tokens": None, "max_cost": 2.0, "score": True}, "combos": {}}
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "batch.json").write_text(json.dumps(old))
    spec = BatchManifest.model_validate(old).spec
    assert spec.budgets.max_steps == 9 and spec.budgets.max_cost == 2.0 and spec.actor.kind is None
    result = run_batch(batch)
    assert result.done == 1, result.results
