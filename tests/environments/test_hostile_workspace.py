"""Hostile workspaces must not break the host process, the run record or a resume.

Each hostile thing is made by a real process in the sandbox (as an agent's script would make
it), then the host acts, records and resumes. Each test failed before the workspace I/O moved
to :mod:`sandbox.fs` (see the report of issue 15 for how).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.replay import ReplayActor
from agent.runner import Budgets, create_run, drive
from environments.acting.environment import Environment, code_mounts
from environments.acting.observation import Observation
from environments.record.runs import RunDir, RunMeta
from environments.task.spec import load_task
from sandbox.fs import WorkspaceFS
from sandbox.local import LocalSandbox
from tests.conftest import write_task
from tests.environments.test_runs import write_actions


@pytest.fixture
def env(tiny_task: Path, tmp_path: Path) -> Iterator[Environment]:
    """An environment that records every step (snapshot + trace line), as a run does."""
    task = load_task(tiny_task)
    meta = RunMeta(run_id="hostile", task=task.name, task_root=str(task.root), actor="test")
    run = RunDir.create(tmp_path / "runs", meta, task.env_dir)
    sandbox = LocalSandbox(run.workspace, mounts=code_mounts())
    yield Environment(task, run.workspace, sandbox, run=run, observation_cap=2000)
    sandbox.close()


def in_sandbox(env: Environment, code: str) -> None:
    """Run ``code`` as a process in the sandbox (what an agent's script can do)."""
    result = env.sandbox.exec([env.sandbox.python, "-c", code], timeout=120)
    assert result.exit_code == 0, result.stderr


def without_hanging(fn, *args) -> object:
    """``fn(*args)`` in a thread: a host blocked forever (a FIFO) fails the test, not the suite."""
    box: list = []
    worker = threading.Thread(target=lambda: box.append(fn(*args)), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), f"the host blocked in {fn.__name__}{args}"
    return box[0]


def link_to_host(env: Environment, tmp_path: Path) -> None:
    """``dlink`` -> a host folder, ``flink`` -> a host file."""
    (tmp_path / "hostdir").mkdir()
    (tmp_path / "hostfile").write_text("host")
    os.symlink(tmp_path / "hostdir", env.workspace / "dlink")
    os.symlink(tmp_path / "hostfile", env.workspace / "flink")


LIST_THEN_ANSWER = [
    {"action": "List Files", "args": {"dir_path": "."}},
    {"action": "Final Answer", "args": {"final_answer": "done"}},
]


def reloaded(env: Environment) -> RunDir:
    run = RunDir.open(env.run.path)
    assert len(run.steps()) == env.step_count
    return run


def test_a_name_that_is_not_utf8_is_noted_and_the_run_records_and_resumes(tmp_path):
    maker = "import os\nopen(os.fsencode('bad\\udcff.txt'), 'w').write('x')\nopen('ok.txt', 'w').write('y')\n"
    task = write_task(tmp_path / "t", files={"env/mk.py": maker})
    actions = write_actions(tmp_path / "a.jsonl", [
        {"action": "Execute Script", "args": {"script_name": "mk.py"}},
        {"action": "List Files", "args": {"dir_path": "."}},
        {"action": "Read File", "args": {"file_name": "ok.txt"}},
        {"action": "Final Answer", "args": {"final_answer": "done"}},
    ])
    run, spec = create_run(task, ReplayActor.from_file(actions), tmp_path / "runs", sandbox="local",
                           budgets=Budgets(max_steps=2))
    assert drive(run, spec, ReplayActor.from_file(actions)).status == "max_steps"
    again = RunDir.open(run.path)
    again.meta.budgets["max_steps"] = 10
    meta = drive(again, again.task(), ReplayActor.from_file(actions))  # resume
    assert meta.status == "finished", meta.status_reason
    steps = RunDir.open(run.path).steps()
    assert "bad\\xff.txt" in steps[0].observation and "not UTF-8" in steps[0].observation
    assert "bad\\xff.txt (its name is not UTF-8" in steps[1].observation
    assert "ok.txt" in steps[0].changed and steps[2].observation == "y"


def test_lone_surrogates_in_arguments_replies_and_answers_are_recorded(env):
    assert not env.step("Write File", {"file_name": "s.txt", "content": "a\ud800b"},
                        meta={"reply": "model said \udcff"}).error
    assert env.step("Read File", {"file_name": "x\ud800.txt"}).error
    assert env.step("Final Answer", {"final_answer": "done \ud800"}).done
    run = reloaded(env)
    assert run.steps()[0].meta["reply"] == "model said \\udcff"
    assert run.meta.final_answer == "done \\ud800"
    assert (env.workspace / "s.txt").read_text() == "a\\ud800b"


def test_a_1200_deep_tree_is_walked_snapshotted_and_restored_without_recursion(env, tmp_path):
    try:
        in_sandbox(env, "import os\nfor _ in range(1200):\n    os.mkdir('d'); os.chdir('d')\n"
                        "open('bottom.txt', 'w').write('deep')\n")
        obs = env.step("List Files", {"dir_path": "."})
        assert not obs.error and "d/" in obs.text
        assert "more than 100 folders deep" in obs.text
        run = reloaded(env)
        run.restore(1, tmp_path / "restored")
        assert (tmp_path / "restored" / "train.py").is_file()
        run.restore(1)  # resume's restore into the workspace: the tree past the cap is removed
        assert WorkspaceFS(env.workspace).walk().skipped == []
    finally:  # pytest's own clean-up of old tmp_paths recurses (shutil.rmtree) and would fail
        WorkspaceFS(env.workspace).remove_tree("d")


def test_a_fifo_is_refused_by_every_file_action_without_blocking(env):
    in_sandbox(env, "import os\nos.mkfifo('pipe')\n")
    for action, args in [
        ("Write File", {"file_name": "pipe", "content": "x"}),
        ("Append File", {"file_name": "pipe", "content": "x"}),
        ("Read File", {"file_name": "pipe"}),
        ("Copy File", {"source": "pipe", "destination": "x.txt"}),
        ("Copy File", {"source": "train.py", "destination": "pipe"}),
        ("Inspect Script Lines", {"script_name": "pipe", "start_line_number": 1, "end_line_number": 2}),
    ]:
        obs: Observation = without_hanging(env.step, action, args)
        assert obs.error and "FIFO" in obs.text, (action, obs.text)
    listing = without_hanging(env.step, "List Files", {"dir_path": "."})
    assert "pipe (fifo" in listing.text
    assert "pipe" not in reloaded(env).snapshots.load(f"{env.step_count:05d}").files


def test_sparse_files_count_whole_against_the_disk_cap_and_are_not_stored(env):
    """2.25 GiB of sparse files, each under the per-file cap (one 2 GiB file cannot be written
    at all: RLIMIT_FSIZE, see tests/sandbox/hostile.py), past the 1024 MB workspace cap."""
    in_sandbox(env, "for i in range(3):\n    open(f'big{i}.bin', 'wb').truncate(768 << 20)\n")
    obs = env.step("List Files", {"dir_path": "."})
    assert "[limits] disk_mb" in obs.text and "not stored" in obs.text
    run = reloaded(env)
    manifest = run.snapshots.load(f"{env.step_count:05d}")
    assert not manifest.stored and not any(f.startswith("big") for f in manifest.files)
    stored = sum(p.stat().st_blocks * 512 for p in run.path.rglob("*") if p.is_file())
    assert stored < 50 << 20
    in_sandbox(env, "import os\nfor i in range(3):\n    os.remove(f'big{i}.bin')\n")
    assert "disk_mb" not in env.step("List Files", {"dir_path": "."}).text
    assert reloaded(env).snapshots.load(f"{env.step_count:05d}").stored


def test_reading_a_300mb_file_is_streamed_and_capped(env):
    in_sandbox(env, "line = 'x' * 1023 + '\\n'\nwith open('huge.txt', 'w') as f:\n"
                    "    for _ in range(300 * 1024):\n        f.write(line)\n")
    tracemalloc.start()
    try:
        obs = env.step("Read File", {"file_name": "huge.txt"})
        lines = env.step("Inspect Script Lines", {"script_name": "huge.txt", "start_line_number": 2,
                                                  "end_line_number": 3})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"peak {peak / 2**20:.0f} MB"
    assert not obs.error and "314,572,800 bytes; only its first" in (obs.full_text or obs.text)
    shown = lines.full_text or lines.text
    assert "ends at line 307200" in shown and shown.count("x" * 1023) == 2
    biggest = max(len(line) for line in env.run.trace_path.read_bytes().splitlines())
    assert biggest < 1 << 20
    (env.workspace / "huge.txt").unlink()  # 600 MB less in the tmp_paths pytest keeps
    shutil.rmtree(env.run.path / "snapshots" / "objects")


def test_a_hard_link_to_a_read_only_file_is_replaced_never_written_through(env):
    original = (env.workspace / "data.txt").read_text()
    in_sandbox(env, "import os\nos.link('data.txt', 'h.txt')\n")
    for action, args in [
        ("Write File", {"file_name": "h.txt", "content": "9 9 9"}),
        ("Append File", {"file_name": "h.txt", "content": "9"}),
        ("Copy File", {"source": "train.py", "destination": "h.txt"}),
        ("Undo Edit Script", {"script_name": "h.txt"}),
    ]:
        assert not env.step(action, args).error, action
        assert (env.workspace / "data.txt").read_text() == original, action
    assert (env.workspace / "h.txt").read_text() == "9 9 99"


class CrashingActor(ReplayActor):
    """Replays its actions, but the host 'crashes' (a bug of labcoat's) on its second proposal."""

    def propose(self, env):
        if self.position == 1:
            raise RuntimeError("boom in the host")
        return super().propose(env)


def test_a_host_crash_is_recorded_as_error_with_its_reason_and_the_run_resumes(tiny_task, tmp_path):
    actions = write_actions(tmp_path / "a.jsonl", LIST_THEN_ANSWER)
    run, spec = create_run(tiny_task, ReplayActor.from_file(actions), tmp_path / "runs", sandbox="local")
    with pytest.raises(RuntimeError, match="boom"):
        drive(run, spec, CrashingActor.from_file(actions))
    meta = RunDir.open(run.path).meta
    assert meta.status == "error" and "RuntimeError: boom in the host" in meta.status_reason
    again = RunDir.open(run.path)
    assert drive(again, again.task(), ReplayActor.from_file(actions)).status == "finished"
    assert [s.action for s in RunDir.open(run.path).steps()] == ["List Files", "Final Answer"]


def test_observations_name_no_host_path_and_show_no_traceback(env, tmp_path):
    link_to_host(env, tmp_path)
    cases = [
        ("Write File", {"file_name": "a" * 300, "content": "x"}),
        ("Write File", {"file_name": "train.py/x.txt", "content": "x"}),
        ("Read File", {"file_name": "dlink/x"}),
        ("Read File", {"file_name": "."}),
        ("Read File", {"file_name": "missing/x.txt"}),
        ("List Files", {"dir_path": "train.py"}),
        ("Copy File", {"source": "train.py", "destination": "train.py"}),
        ("Copy File", {"source": "train.py", "destination": "a" * 300}),
        ("Execute Script", {"script_name": "train.py", "arguments": "a\x00b"}),
    ]
    for action, args in cases:
        obs = env.step(action, args)
        for leak in (str(tmp_path), "Traceback", "Errno", "/workspace"):
            assert leak not in obs.text, (action, args, obs.text)
    assert "too long" in env.step(*cases[0]).text
    assert "not a folder" in env.step(*cases[1]).text
    assert "NUL" in env.step(*cases[-1]).text


def test_list_files_shows_symlinks_as_symlinks_and_never_stats_through_them(env, tmp_path):
    link_to_host(env, tmp_path)
    listing = env.step("List Files", {"dir_path": "."}).text.splitlines()
    assert "dlink@ (symlink)" in listing and "flink@ (symlink)" in listing
    as_dir = env.step("List Files", {"dir_path": "dlink"}).text
    as_file = env.step("List Files", {"dir_path": "flink"}).text
    assert as_dir.replace("dlink", "X") == as_file.replace("flink", "X")


def test_resume_of_a_replay_run_needs_no_actions_file(tiny_task, tmp_path):
    from tui.cli import app

    actions = write_actions(tmp_path / "a.jsonl", LIST_THEN_ANSWER)
    first = CliRunner().invoke(app, ["run", str(tiny_task), "--actions", str(actions), "--max-steps", "1",
                                     "--sandbox", "local", "--runs-dir", str(tmp_path / "runs"),
                                     "--no-score", "--json"])
    assert first.exit_code == 0, first.output
    run_dir = json.loads(first.stdout[first.stdout.index("{"):])["run_dir"]
    actions.unlink()  # the original is gone: the run kept its own copy
    second = CliRunner().invoke(app, ["run", "--resume", run_dir, "--max-steps", "5", "--no-score",
                                      "--json"])
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout[second.stdout.index("{"):])["status"] == "finished"


def test_scoring_a_live_hostile_workspace_copies_only_its_regular_files(env):
    """Validate Submission scores the live workspace: a FIFO, a link to a host file and a
    1,200-deep tree in it must neither block, crash, nor reach the scorer."""
    from environments.scoring.evaluate import evaluate

    secret = env.workspace.parent / "host-secret.txt"
    secret.write_text("99999")
    try:
        in_sandbox(env, "import os\nos.mkfifo('pipe')\nopen('result.txt', 'w').write('7')\n"
                        "for _ in range(1200):\n    os.mkdir('d'); os.chdir('d')\n")
        os.symlink(secret, env.workspace / "linked.txt")
        result = without_hanging(evaluate, env.task, env.workspace, "local")
        assert result.failure is None and result.value == 7.0, result
    finally:
        WorkspaceFS(env.workspace).remove_tree("d")
