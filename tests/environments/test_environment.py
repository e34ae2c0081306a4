from __future__ import annotations

import json
import os
import threading

import pytest

from environments.acting.actions import ActionContext
from environments.acting.environment import Environment, code_mounts
from environments.acting.low_level import LOW_LEVEL_ACTIONS
from environments.acting.observation import make_observation
from environments.acting.paths import PathGuard, PathRefused
from environments.acting.tool_actions import tool_action
from environments.record.backups import Backups
from environments.record.runs import RunDir, RunMeta
from environments.task.spec import load_task
from sandbox import CODE_TARGET, Mount
from sandbox.fs import WorkspaceError
from sandbox.local import LocalSandbox
from tests.conftest import FIXTURES


@pytest.fixture
def env(tiny_task, tmp_path):
    task = load_task(tiny_task)
    ws = tmp_path / "ws"
    import shutil

    shutil.copytree(task.env_dir, ws)
    sandbox = LocalSandbox(ws, mounts=code_mounts())
    yield Environment(task, ws, sandbox, observation_cap=400)
    sandbox.close()


def listing(env):
    return sorted(p.relative_to(env.workspace).as_posix() for p in env.workspace.rglob("*"))


@pytest.mark.parametrize("bad", ["../escape.txt", "/etc/passwd", "a/../../x", "~/x", ""])
def test_path_guard_refuses_escapes_and_changes_nothing(env, bad):
    before = listing(env)
    obs = env.step("Write File", {"file_name": bad, "content": "x"})
    assert obs.error
    assert listing(env) == before
    assert env.step("Read File", {"file_name": bad}).error


def test_symlink_leading_out_is_refused_for_every_file_action(env, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP-SECRET")
    os.symlink(secret, env.workspace / "link.txt")
    for action, args in [
        ("Read File", {"file_name": "link.txt"}),
        ("Write File", {"file_name": "link.txt", "content": "overwrite"}),
        ("Append File", {"file_name": "link.txt", "content": "more"}),
        ("Copy File", {"source": "link.txt", "destination": "copy.txt"}),
        ("Copy File", {"source": "train.py", "destination": "link.txt"}),
        ("Inspect Script Lines", {"script_name": "link.txt", "start_line_number": 1, "end_line_number": 1}),
    ]:
        obs = env.step(action, args)
        assert obs.error, action
        assert "TOP-SECRET" not in obs.text
    assert secret.read_text() == "TOP-SECRET"
    assert not (env.workspace / "copy.txt").exists()


def test_what_an_actor_reads_between_steps_passes_the_guard(env, tmp_path):
    """An actor planning from the workspace (the baseline agent) reads through the Environment:
    the same refusals as a file action, and never a link."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP-SECRET")
    os.symlink(secret, env.workspace / "link.txt")
    os.symlink(tmp_path, env.workspace / "outside")
    script = (env.workspace / "train.py").read_text()
    assert env.read_text("train.py", 1 << 20) == script and env.read_text("./train.py", 4) == script[:4]
    assert env.file_kind("train.py") == "file" and env.file_kind("nope.py") is None
    assert env.file_kind("link.txt") == "symlink" and env.file_kind("outside/host-secret.txt") is None
    assert ("train.py", "file") in env.list_folder() and ("link.txt", "symlink") in env.list_folder(".")
    for bad in ["../escape.txt", "/etc/passwd", "a/../../x", "~/x", ""]:
        for read in (lambda: env.read_text(bad, 100), lambda: env.file_kind(bad), lambda: env.list_folder(bad)):
            with pytest.raises(PathRefused):
                read()
    for link in ["link.txt", "outside/host-secret.txt"]:
        with pytest.raises(WorkspaceError) as refused:
            env.read_text(link, 100)
        assert "TOP-SECRET" not in str(refused.value)
    with pytest.raises(WorkspaceError):
        env.list_folder("outside")


def test_what_an_actor_reads_waits_for_a_running_command(env):
    """The reads hold the lock every sandbox command holds, so a script still renaming files
    cannot race them."""
    done = threading.Event()
    reader = threading.Thread(target=lambda: (env.read_text("train.py", 100), done.set()))
    with env.sandbox.files():  # as a command of the sandbox would
        reader.start()
        assert not done.wait(0.3)
    reader.join(10)
    assert done.is_set()


def test_read_only_files_cannot_be_written_copied_over_or_undone(env):
    original = (env.workspace / "data.txt").read_text()
    for action, args in [
        ("Write File", {"file_name": "data.txt", "content": "9 9 9"}),
        ("Append File", {"file_name": "data.txt", "content": "9"}),
        ("Copy File", {"source": "train.py", "destination": "data.txt"}),
        ("Copy File", {"source": "train.py", "destination": "./data.txt"}),
        ("Undo Edit Script", {"script_name": "data.txt"}),
    ]:
        obs = env.step(action, args)
        assert obs.error and "read-only" in obs.text, (action, obs.text)
    assert (env.workspace / "data.txt").read_text() == original
    assert not env.step("Read File", {"file_name": "data.txt"}).error


def test_bad_action_name_and_bad_arguments_give_usage_not_exceptions(env):
    obs = env.step("Fly To Moon", {})
    assert obs.error and "Valid actions are" in obs.text and "Execute Script" in obs.text
    obs = env.step("Read File", {"filename": "train.py"})
    assert obs.error and "file_name" in obs.text and "Usage" in obs.text
    obs = env.step("Inspect Script Lines", '{"script_name": "train.py", "start_line_number": "x"}')
    assert obs.error and "start_line_number" in obs.text
    obs = env.step("Read File", "{not json")
    assert obs.error and "not valid JSON" in obs.text
    obs = env.step("read file", {"file_name": "train.py"})  # forgiving about case and spaces
    assert not obs.error and "nums" in obs.text


def test_write_execute_inspect_undo_and_final_answer(env):
    assert not env.step("Write File", {"file_name": "train.py", "content": "print('v1')\n"}).error
    assert not env.step("Write File", {"file_name": "train.py", "content": "print('v2')\n"}).error
    obs = env.step("Execute Script", {"script_name": "train.py"})
    assert not obs.error and "v2" in obs.text and obs.exit_code == 0
    assert "v1" in env.step("Undo Edit Script", {"script_name": "train.py"}).text
    assert "nums" in env.step("Undo Edit Script", {"script_name": "train.py"}).text
    assert env.step("Undo Edit Script", {"script_name": "train.py"}).error
    too_many = env.step("Inspect Script Lines", {"script_name": "train.py", "start_line_number": 1,
                                                 "end_line_number": 101})
    assert too_many.error and "100" in too_many.text
    lines = env.step("Inspect Script Lines", {"script_name": "train.py", "start_line_number": 2,
                                              "end_line_number": 2})
    assert "result.txt" in lines.text and "nums = " not in lines.text
    failing = env.step("Execute Script", {"script_name": "train.py", "arguments": "--x"})
    assert not failing.error  # argv is ignored by this script: exit 0
    (env.workspace / "boom.py").write_text("raise SystemExit(3)")
    assert env.step("Execute Script", {"script_name": "boom.py"}).exit_code == 3
    done = env.step("Final Answer", {"final_answer": "done"})
    assert done.done and env.done
    assert env.step("List Files", {"dir_path": "."}).error


def test_a_progress_bar_redrawn_with_carriage_returns_shows_its_last_state(env):
    (env.workspace / "bar.py").write_text(
        "import sys\nfor i in range(101):\n    sys.stderr.write(f'\\r{i:3d}%|' + '#' * (i // 10))\n"
        "sys.stderr.write('\\n')\nprint('loss 0.25', end='\\r\\n')\nprint('done')\n")
    obs = env.step("Execute Script", {"script_name": "bar.py"})
    assert not obs.error and obs.text.count("%|") == 1 and "100%|##########" in obs.text
    assert "\r" not in obs.text and "loss 0.25\n" in obs.text and "done" in obs.text


def test_observations_are_capped_with_a_note_and_kept_whole(env):
    (env.workspace / "loud.py").write_text("print('HEAD'); print('x' * 5000); print('TAIL')")
    obs = env.step("Execute Script", {"script_name": "loud.py"})
    assert obs.truncated and len(obs.text) < 600
    assert "HEAD" in obs.text and "TAIL" in obs.text and "cut from the middle" in obs.text
    assert obs.full_text is not None and "x" * 5000 in obs.full_text


def test_method_tool_runs_in_the_sandbox_as_json(tiny_task, tmp_path):
    import importlib
    import sys

    sys.path.insert(0, str(FIXTURES / "tools"))
    try:
        spec = importlib.import_module("labcoat_echo").TOOLS[0]
    finally:
        sys.path.remove(str(FIXTURES / "tools"))
    task = load_task(tiny_task)
    ws = tmp_path / "ws"
    ws.mkdir()
    mounts = [*code_mounts(), Mount(source=FIXTURES / "tools" / "labcoat_echo",
                                    target=f"{CODE_TARGET}/labcoat_echo")]
    os.environ["LABCOAT_TEST_API_KEY"] = "sk-must-not-leak"
    try:
        with LocalSandbox(ws, mounts=mounts) as sb:
            env = Environment(task, ws, sb, extra_actions=[tool_action("echo", spec)])
            obs = env.step("echo", {"message": "hi", "repeat": 3, "write_file": "out.txt"})
            bad = env.step("echo", {"message": "hi", "repeat": 0})
    finally:
        del os.environ["LABCOAT_TEST_API_KEY"]
    assert not obs.error, obs.text
    assert obs.data["echo"] == "hihihi" and obs.data["cwd"] == "/workspace"
    assert (ws / "out.txt").read_text() == "hihihi"
    assert "LABCOAT_TEST_API_KEY" not in json.dumps(obs.data)
    assert bad.error and "repeat" in bad.text


@pytest.mark.parametrize("given", [{"final_answer": "the answer"}, '{"final_answer": "the answer"}'],
                         ids=["object", "json-string"])
def test_the_final_answer_is_recorded_however_the_input_came(tiny_task, tmp_path, given):
    """The answer is read from the validated arguments, so a JSON-string input loses nothing."""
    task = load_task(tiny_task)
    meta = RunMeta(run_id="answer", task=task.name, task_root=str(task.root), actor="test")
    run = RunDir.create(tmp_path / "runs", meta, task.env_dir)
    with LocalSandbox(run.workspace, mounts=code_mounts()) as sb:
        assert Environment(task, run.workspace, sb, run=run).step("Final Answer", given).done
    assert RunDir.open(run.path).meta.final_answer == "the answer"


def test_an_unrecorded_session_keeps_its_own_steps(env):
    """What a rationed action counts (``ActionContext.steps``) exists without a run too."""
    env.step("List Files", {"dir_path": "."})
    env.step("Read File", {"file_name": "nope.txt"})
    steps = env.steps()
    assert [(s.index, s.action, s.error) for s in steps] == [(1, "List Files", False), (2, "Read File", True)]
    assert env.last_step is steps[-1] and steps[-1].snapshot is None and env.run_folder is None


class BareContext:
    """Just what :class:`ActionContext` promises, without an Environment: handlers need no more."""

    def __init__(self, task, workspace, sandbox, backups_dir):
        self.task, self.workspace, self.sandbox = task, workspace, sandbox
        self.guard = PathGuard(workspace, task.is_read_only)
        self.backups = Backups(backups_dir)
        self.sandbox_kind, self.run_folder = sandbox.backend, None

    def observe(self, text, **kw):
        return make_observation(text, 10_000, **kw)

    def steps(self):
        return []


def test_low_level_handlers_need_only_the_action_context(tiny_task, tmp_path):
    task = load_task(tiny_task)
    ws = tmp_path / "ws"
    ws.mkdir()
    handlers = {spec.name: spec for spec in LOW_LEVEL_ACTIONS}
    with LocalSandbox(ws, mounts=code_mounts()) as sb:
        ctx: ActionContext = BareContext(task, ws, sb, tmp_path / "backups")
        def act(name, **args):
            spec = handlers[name]
            return spec.handler(ctx, spec.validate(args))
        act("Write File", file_name="hello.py", content="print('hi from the sandbox')\n")
        ran = act("Execute Script", script_name="hello.py")
        act("Write File", file_name="hello.py", content="changed\n")
        undone = act("Undo Edit Script", script_name="hello.py")
    assert ran.exit_code == 0 and "hi from the sandbox" in ran.text and ran.data["outcome"] == "ok"
    assert "print('hi" in undone.text and (ws / "hello.py").read_text().startswith("print")
