"""A sandbox that dies under a run is the machine's failure, not a step of the actor's.

The sandbox is killed from the host while the actor's script runs (the script writes a marker,
then sleeps; the test waits for the marker): the run ends ``error`` with ``infrastructure``
set and its trace as it stood before that step; resuming it (``run --resume``, ``batch
--retry-failed``) continues from there. What the actor's own code does to itself (SIGKILL,
exit 137, a kill of its supervisor) stays its step's result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import sandbox.factory
from agent import session
from agent.batch import BatchSpec, combo_key, find_run, run_batch
from agent.config import ActorConfig
from agent.runner import continue_on
from environments.record.runs import RunDir, RunMeta
from sandbox import SandboxError
from sandbox.base import SandboxLost
from sandbox.namespace import _children
from tests.sandbox.backends import docker_marks, make_sandbox
from tui.cli import app

SLOW = ("import time\nopen('started', 'w').write('1')\ntime.sleep(4)\n"
        "open('result.txt', 'w').write('60')\nprint('done')\n")


def actions_file(path: Path, script: str = SLOW) -> Path:
    lines = [{"action": "Write File", "args": {"file_name": "slow.py", "content": script}},
             {"action": "Execute Script", "args": {"script_name": "slow.py"}},
             {"action": "Final Answer", "args": {"final_answer": "60"}}]
    path.write_text("".join(json.dumps(a) + "\n" for a in lines))
    return path


def wait_for(found, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (got := found()):
            return got
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {timeout:g} s")


def kill_local_sandbox(workspace: Path) -> int:
    """SIGKILL the supervisor (PID 1 inside) of the bubblewrap namespace over ``workspace``,
    from the host; how many were killed."""
    bind = b"\0--bind\0" + str(workspace.resolve()).encode() + b"\0/workspace\0"
    killed = 0
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if bind in argv:
            for pid in _children(int(entry.name)):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def remove_docker_sandbox(workspace: Path) -> int:
    """``docker rm -f`` the sandbox container over ``workspace``; how many were removed."""
    listed = subprocess.run(["docker", "ps", "-q", "--filter",
                             f"label=labcoat.workspace={workspace.resolve()}"],
                            capture_output=True, text=True, check=True).stdout.split()
    for cid in listed:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, check=True)
    return len(listed)


def lose_sandbox_mid_step(begun: session.Session, kill) -> RunMeta:
    """Drive ``begun`` on a thread, kill its sandbox once the slow script runs; the meta."""
    ended: dict = {}
    worker = threading.Thread(target=lambda: ended.update(meta=begun.drive()), daemon=True)
    worker.start()
    wait_for(lambda: (begun.run.workspace / "started").exists(), "the script's start")
    assert kill(begun.run.workspace) == 1
    worker.join(120)
    assert "meta" in ended, "drive did not return after its sandbox was lost"
    return RunDir.open(begun.run.path).meta


def assert_lost_after_step_one(run: RunDir, backend: str) -> None:
    meta = RunDir.open(run.path).meta
    assert (meta.status, meta.infrastructure) == ("error", True)
    assert meta.status_reason.startswith("sandbox lost: ") and "infrastructure" in meta.status_reason
    assert [s.action for s in run.steps()] == ["Write File"]  # the lost step is no observation
    assert meta.totals.steps == 1
    [event] = meta.sandbox_events
    assert (event.kind, event.backend, event.step) == ("lost", backend, 1)


def assert_completed_from_step_one(run: RunDir) -> RunMeta:
    meta = RunDir.open(run.path).meta
    assert (meta.status, meta.infrastructure, meta.resumed) == ("finished", False, 1)
    steps = run.steps()
    assert [s.action for s in steps] == ["Write File", "Execute Script", "Final Answer"]
    assert steps[1].exit_code == 0 and "done" in steps[1].observation
    return meta


def test_a_namespace_killed_mid_command_ends_the_run_and_resume_completes_it(tiny_task, tmp_path,
                                                                            monkeypatch):
    begun = session.start(tiny_task, ActorConfig(actions=str(actions_file(tmp_path / "a.jsonl"))),
                          None, tmp_path / "runs", sandbox="local")
    lose_sandbox_mid_step(begun, kill_local_sandbox)
    assert_lost_after_step_one(begun.run, "local")
    resume = ["run", "--resume", str(begun.run.path), "--no-score"]
    # its backend gone and no --sandbox given: told what to do, the run left as it was
    monkeypatch.setattr(sandbox.factory, "why_unavailable", lambda kind: "bubblewrap is gone")
    res = CliRunner().invoke(app, resume)
    assert res.exit_code not in (0, None) and not isinstance(res.exception, SandboxError)
    assert "continue it with --sandbox auto" in " ".join(res.output.split())
    assert_lost_after_step_one(begun.run, "local")
    monkeypatch.undo()
    res = CliRunner().invoke(app, [*resume, "--sandbox", "auto"])  # its own backend, available
    assert res.exit_code == 0, res.output
    assert "continuing on sandbox" not in res.output
    assert assert_completed_from_step_one(begun.run).sandbox == "local"


@pytest.mark.slow  # a whole batch with a lost sandbox (~7 s); the run-level resumes above stay fast
def test_retry_failed_resumes_a_batch_run_whose_sandbox_was_lost(tiny_task, tmp_path):
    model = f"replay/{actions_file(tmp_path / 'a.jsonl')}"
    spec = BatchSpec(tasks=[str(tiny_task)], models=[model], sandbox="local")
    batch, key = tmp_path / "batch", combo_key(str(tiny_task), model, 0)
    ended: dict = {}
    worker = threading.Thread(target=lambda: ended.update(result=run_batch(batch, spec)), daemon=True)
    worker.start()
    run_dir = wait_for(lambda: (r := find_run(batch, key)) and (r / "workspace" / "started").exists()
                       and r, "the batch run's script start")
    assert kill_local_sandbox(run_dir / "workspace") == 1
    worker.join(180)
    [res] = ended["result"].results
    assert (res.ok, res.status) == (False, "error") and res.reason.startswith("sandbox lost: ")
    assert_lost_after_step_one(RunDir.open(run_dir), "local")
    assert run_batch(batch).ran == 0  # a failure: retried only when asked
    retried = run_batch(batch, retry_failed=True)
    assert (retried.done, retried.failed) == (1, 0)
    assert find_run(batch, key) == run_dir and not (batch / ".retired").exists()  # resumed, not afresh
    assert_completed_from_step_one(RunDir.open(run_dir))
    assert retried.results[0].success is True  # scored


def test_the_actors_own_sigkill_is_its_steps_result_not_the_machines(tiny_task, tmp_path):
    script = "import os, signal\nopen('started', 'w').write('1')\nos.kill(os.getpid(), signal.SIGKILL)\n"
    begun = session.start(tiny_task, ActorConfig(actions=str(actions_file(tmp_path / "k.jsonl", script))),
                          None, tmp_path / "runs", sandbox="local")
    meta = begun.drive()
    assert (meta.status, meta.infrastructure, meta.sandbox_events) == ("finished", False, [])
    steps = begun.run.steps()
    assert [s.action for s in steps] == ["Write File", "Execute Script", "Final Answer"]
    assert (steps[1].exit_code, steps[1].error) == (137, True)


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=docker_marks)])
def test_sandboxed_code_cannot_pass_its_own_end_off_as_a_lost_sandbox(backend, tmp_path):
    """SIGKILL of itself, exit 137, and a SIGKILL of the supervisor (PID 1 inside; bubblewrap
    and the engine are out of sight) are results; the sandbox is the same one after them."""
    (tmp_path / "ws").mkdir()
    with make_sandbox(backend, tmp_path / "ws") as sb:
        first = sb.exec(["true"])
        assert first.ok
        same = (sb._ns, sb._ns.proc.pid) if backend == "local" else sb.container_id
        for argv, code in ((["sh", "-c", "kill -9 $$"], 137), (["sh", "-c", "exit 137"], 137),
                           (["sh", "-c", "kill -9 1; kill -9 -1; exit 3"], 3),
                           ([sb.python, "-c", "import os; os.kill(1, 9); os.kill(os.getpid(), 9)"], 137)):
            try:
                result = sb.exec(argv, timeout=60)
            except SandboxLost as err:
                pytest.fail(f"{argv} passed for a lost sandbox: {err}")
            assert (result.exit_code, result.timed_out, result.oom_killed) == (code, False, False), argv
        assert sb.exec(["true"]).ok
        assert ((sb._ns, sb._ns.proc.pid) if backend == "local" else sb.container_id) == same


@docker_marks[0]
@docker_marks[1]
def test_a_removed_container_ends_the_run_and_auto_resumes_on_another_backend(tiny_task, tmp_path,
                                                                               monkeypatch):
    begun = session.start(tiny_task, ActorConfig(actions=str(actions_file(tmp_path / "d.jsonl"))),
                          None, tmp_path / "runs", sandbox="docker")
    lose_sandbox_mid_step(begun, remove_docker_sandbox)
    assert_lost_after_step_one(begun.run, "docker")
    # the engine is "gone" now: `--sandbox auto` continues the run under bubblewrap
    real = sandbox.factory.why_unavailable
    monkeypatch.setattr(sandbox.factory, "why_unavailable",
                        lambda kind: "no Docker engine answers" if kind == "docker" else real(kind))
    again = session.resume(begun.run.path, sandbox="auto")
    assert again.note == ("continuing on sandbox local instead of docker: docker is not available "
                          "now (no Docker engine answers)")
    again.drive()
    meta = assert_completed_from_step_one(again.run)
    assert meta.sandbox == "local"
    assert [(e.kind, e.backend, e.previous, e.step) for e in meta.sandbox_events] == [
        ("lost", "docker", None, 1), ("switched", "local", "docker", 1)]


def _meta(sandbox: str) -> SimpleNamespace:
    return SimpleNamespace(meta=RunMeta(run_id="r", task="t", task_root="/nowhere", actor="agent",
                                        sandbox=sandbox))


def test_which_backend_a_resumed_run_continues_on():
    gone = {"docker"}

    def why_not(kind: str) -> str | None:
        return f"{kind} is gone\nsecond line" if kind in gone else None

    run = _meta("docker")
    assert continue_on(run, None, why_not=why_not) is None  # its own, unchecked
    assert continue_on(run, "docker", why_not=why_not) is None
    assert run.meta.sandbox == "docker" and run.meta.sandbox_events == []
    note = continue_on(run, "auto", why_not=why_not)
    assert note == "continuing on sandbox local instead of docker: docker is not available now (docker is gone)"
    assert (run.meta.sandbox, run.meta.sandbox_events[-1].previous) == ("local", "docker")
    assert continue_on(_meta("local"), "auto", why_not=why_not) is None  # available: kept
    gone.add("local")
    with pytest.raises(SandboxError, match="nor is any other"):
        continue_on(_meta("docker"), "auto", why_not=why_not)
    named = _meta("docker")
    assert "asked for local" in continue_on(named, "local", why_not=why_not)
    assert named.meta.sandbox == "local"
    lost = _meta("docker")  # its sandbox lost, its backend gone, none asked: say what to do
    lost.meta.infrastructure = True
    with pytest.raises(SandboxError, match="docker is not available now .docker is gone.; "
                                           "continue it with --sandbox auto"):
        continue_on(lost, None, why_not=why_not)
