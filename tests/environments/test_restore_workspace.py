"""Restore Workspace (a free action an actor brings: the tree agent's closing step): the whole
workspace as a recorded step left it, from the run's snapshot, whatever the workspace holds now."""

from __future__ import annotations

import os

import pytest

from environments.acting.environment import Environment, code_mounts
from environments.acting.low_level import RESTORE_WORKSPACE
from environments.record.runs import RunDir, RunMeta
from environments.task.spec import load_task
from sandbox.local import LocalSandbox


@pytest.fixture
def recorded(tiny_task, tmp_path):
    """An Environment over a recorded run with Restore Workspace, after two steps: step 1 wrote
    train.py, step 2 ran it (result.txt)."""
    task = load_task(tiny_task)
    meta = RunMeta(run_id="restore", task=task.name, task_root=str(task.root), actor="test")
    run = RunDir.create(tmp_path / "runs", meta, task.env_dir)
    with LocalSandbox(run.workspace, mounts=code_mounts()) as sb:
        env = Environment(task, run.workspace, sb, run=run, extra_actions=[RESTORE_WORKSPACE])
        assert not env.step("Write File", {"file_name": "train.py",
                                           "content": "open('result.txt', 'w').write('7')\n"}).error
        assert not env.step("Execute Script", {"script_name": "train.py"}).error
        yield env


def files(root) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_it_is_not_offered_by_default_and_is_free(tiny_task, tmp_path):
    from environments.acting.low_level import LOW_LEVEL_ACTIONS

    assert RESTORE_WORKSPACE.free and all(not s.free for s in LOW_LEVEL_ACTIONS)
    assert RESTORE_WORKSPACE.name not in {s.name for s in LOW_LEVEL_ACTIONS}


def test_it_makes_the_workspace_exactly_as_a_step_left_it(recorded):
    env = recorded
    after_run = files(env.workspace)
    assert after_run["result.txt"] == "7"
    start = files(env.task.env_dir)
    obs = env.step("Restore Workspace", {"step": 0})
    assert not obs.error and files(env.workspace) == start and "result.txt" not in files(env.workspace)
    assert sorted(env.last_step.changed) == ["result.txt", "train.py"]
    obs = env.step("Restore Workspace", {"step": 2})
    assert not obs.error and files(env.workspace) == after_run and "as step 2 left it" in obs.text


def test_links_fifos_and_strays_are_removed_never_followed(recorded, tmp_path):
    """What the workspace's code left behind (a link to a host file, a FIFO that would block a
    reader, a folder of junk) is removed by the restore; the link's target is untouched."""
    env = recorded
    host = tmp_path / "host-secret.txt"
    host.write_text("host")
    os.symlink(host, env.workspace / "train.py.link")
    (env.workspace / "train.py").unlink()
    os.symlink(host, env.workspace / "train.py")  # the script itself replaced by a link out
    os.mkfifo(env.workspace / "pipe")
    (env.workspace / "junk" / "deep").mkdir(parents=True)
    (env.workspace / "junk" / "deep" / "x.bin").write_bytes(b"\0" * 100)
    obs = env.step("Restore Workspace", {"step": 2})
    assert not obs.error, obs.text
    assert files(env.workspace) == {"data.txt": "1 2 3\n", "result.txt": "7",
                                    "train.py": "open('result.txt', 'w').write('7')\n"}
    assert not (env.workspace / "train.py").is_symlink() and not (env.workspace / "pipe").exists()
    assert host.read_text() == "host"


@pytest.mark.parametrize("step", [3, 99])
def test_a_step_not_recorded_is_a_clear_error_and_changes_nothing(recorded, step):
    env = recorded
    before = files(env.workspace)
    obs = env.step("Restore Workspace", {"step": step})
    assert obs.error and "there is no step" in obs.text
    assert files(env.workspace) == before


def test_bad_input_and_an_unrecorded_session_are_clear_errors(env_session):
    env = env_session
    for bad in ({"step": -1}, {"step": "two"}, {}):
        obs = env.step("Restore Workspace", bad)
        assert obs.error and "step" in obs.text
    obs = env.step("Restore Workspace", {"step": 0})
    assert obs.error and "records no snapshots" in obs.text


def test_a_snapshot_over_the_disk_cap_is_not_restored(recorded):
    """A step whose snapshot was refused (its manifest repeats the step before's files) must not
    pass for that step's workspace."""
    env = recorded
    manifest = env.run.snapshots.load("00002")
    refused = manifest.model_copy(update={"stored": False})
    path = next(p for p in env.run.path.rglob("00002*") if p.is_file() and p.suffix == ".json")
    path.write_text(refused.model_dump_json())
    assert not env.restorable(2) and env.restorable(1)
    obs = env.step("Restore Workspace", {"step": 2})
    assert obs.error and "was not stored" in obs.text


@pytest.fixture
def env_session(tiny_task, tmp_path):
    import shutil

    task = load_task(tiny_task)
    ws = tmp_path / "ws"
    shutil.copytree(task.env_dir, ws)
    with LocalSandbox(ws, mounts=code_mounts()) as sb:
        yield Environment(task, ws, sb, extra_actions=[RESTORE_WORKSPACE])

