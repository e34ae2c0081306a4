"""The Docker backend against the real engine (skipped, with the reason, only where none answers).

The hostile-script suite runs on docker through ``tests/sandbox/backends.py``; this file checks
what is particular to containers: the container's settings, the same methods/ code and packages
as the host, OOM and timeout reporting, crash clean-up, file ownership, and the CLI.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sandbox import CODE_TARGET, Mount, SandboxError, SandboxLimits, resolve_kind
from tests.sandbox.backends import docker_unavailable, require_docker_image
from tests.sandbox.hostile import survivors

REPO = Path(__file__).resolve().parents[2]

skip_no_engine = pytest.mark.skipif(docker_unavailable() is not None,
                                    reason=docker_unavailable() or "a Docker engine answers")


@pytest.fixture
def engine():
    require_docker_image()
    from sandbox.image import engine_client

    return engine_client()


@pytest.fixture
def open_docker(tmp_path, engine):
    """Open DockerSandboxes on a fresh workspace; all are closed at the end."""
    from sandbox.docker import DockerSandbox

    opened = []

    def make(limits=None, mounts=(), workspace=None):
        ws = workspace or tmp_path / "ws"
        ws.mkdir(exist_ok=True)
        sb = DockerSandbox(ws, limits or SandboxLimits(timeout=60), mounts)
        opened.append(sb)
        return sb

    yield make
    for sb in opened:
        sb.close()


def _ours(engine, run_id: str) -> list:
    from sandbox.docker import LABEL_RUN

    # sparse: no inspect per container, which fails on one the engine removes meanwhile
    return engine.containers.list(all=True, sparse=True,
                                  filters={"label": f"{LABEL_RUN}={run_id}"})


# ---------------------------------------------------------------- the container


@pytest.mark.docker
@skip_no_engine
def test_container_is_locked_down(open_docker, engine):
    limits = SandboxLimits(memory_mb=512, cpus=1.5, pids=100, timeout=30)
    sb = open_docker(limits)
    attrs = engine.api.inspect_container(sb.container_id)
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert any(o.startswith("no-new-privileges") for o in host["SecurityOpt"])
    assert host["PidsLimit"] == 100
    assert host["Memory"] == host["MemorySwap"] == 512 << 20
    assert host["NanoCpus"] == int(1.5e9)
    assert "/tmp" in host["Tmpfs"]
    assert host["AutoRemove"] is True
    user = attrs["Config"]["User"]
    if not sb.rootless:  # a rootless engine's container root is the host user outside
        assert user and not user.startswith("0:") and user != "0"
    binds = {m["Destination"]: m for m in attrs["Mounts"]}
    assert binds["/workspace"]["RW"] is True
    assert Path(binds["/workspace"]["Source"]) == sb.workspace
    assert attrs["Config"]["Labels"]["labcoat.sandbox"] == "1"
    assert attrs["Config"]["Labels"]["labcoat.pid"] == str(os.getpid())
    # And from the inside: not root, no capabilities, read-only root, writable /tmp.
    r = sb.exec(["sh", "-c", "id -u; grep CapEff /proc/self/status; touch /x 2>&1; "
                 "touch /tmp/ok && echo tmp-ok; touch /workspace/ok && echo ws-ok"])
    lines = r.stdout.splitlines()
    assert lines[0] != "0" or sb.rootless
    assert lines[1].split()[1] == "0000000000000000"
    assert "Read-only file system" in r.stdout
    assert "tmp-ok" in r.stdout and "ws-ok" in r.stdout


@pytest.mark.docker
@skip_no_engine
def test_the_supervisors_listener_is_gone_once_it_connected(open_docker, engine):
    """One connection only: the socket file is mounted read-only, and by the time the sandbox
    is open its host name and private folder are gone, so nothing can connect again."""
    from sandbox.docker_link import TARGET

    sb = open_docker()
    mounts = {m["Destination"]: m for m in engine.api.inspect_container(sb.container_id)["Mounts"]}
    assert mounts[TARGET]["RW"] is False
    source = Path(mounts[TARGET]["Source"])
    assert not source.exists() and not source.parent.exists()
    connect = f"import socket; socket.socket(socket.AF_UNIX).connect({TARGET!r})"
    r = sb.exec([sb.python, "-c", connect])
    assert "ConnectionRefusedError" in r.stderr, r


@pytest.mark.docker
@skip_no_engine
def test_runs_the_hosts_methods_code_and_packages(open_docker, tmp_path):
    from methods.registry import METHODS_DIR

    sb = open_docker(mounts=[Mount(source=METHODS_DIR, target=f"{CODE_TARGET}/methods")])
    assert sb.python == "/usr/local/bin/python"
    assert sb.path_for(f"{CODE_TARGET}/methods") == f"{CODE_TARGET}/methods"
    probe = textwrap.dedent("""
        import json, sys, methods, numpy, scipy, sklearn, torch, pydantic
        print(json.dumps({"methods": methods.__file__, "python": sys.version.split()[0],
            "numpy": numpy.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "torch": torch.__version__}))
    """)
    r = sb.exec([sb.python, "-c", probe])
    assert r.exit_code == 0, r.stderr
    import json

    got = json.loads(r.stdout)
    assert got["methods"] == f"{CODE_TARGET}/methods/__init__.py"
    assert got["python"] == sys.version.split()[0]
    for name in ("numpy", "scipy", "scikit-learn", "torch"):
        assert got[name] == md.version(name), name
    # The mount is read-only: the sandbox cannot change the code the host runs.
    r = sb.exec(["sh", "-c", f"touch {CODE_TARGET}/methods/x 2>&1"])
    assert "Read-only file system" in r.stdout
    assert not (METHODS_DIR / "x").exists()


@pytest.mark.docker
@skip_no_engine
def test_a_method_tool_runs_as_python_dash_m(open_docker):
    from methods.registry import METHODS_DIR

    sb = open_docker(mounts=[Mount(source=METHODS_DIR, target=f"{CODE_TARGET}/methods")])
    r = sb.exec([sb.python, "-c", "import methods._tool, methods.toolspec; print('ok')"])
    assert r.exit_code == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.docker
@skip_no_engine
def test_exec_basics_stdin_cwd_env_and_no_secrets(open_docker, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    sb = open_docker()
    (sb.workspace / "sub").mkdir()
    r = sb.exec(["sh", "-c", "cat; pwd; echo err >&2; exit 3"], stdin="from stdin\n",
                cwd="/workspace/sub")
    assert r.exit_code == 3 and not r.ok
    assert r.stdout == "from stdin\n/workspace/sub\n"
    assert r.stderr == "err\n"
    r = sb.exec(["env"], env={"MY_SETTING": "1", "ANTHROPIC_API_KEY": "sk-passed"})
    assert "MY_SETTING=1" in r.stdout
    assert "sk-host-secret" not in r.stdout and "sk-passed" not in r.stdout
    assert "API_KEY" not in r.stdout
    assert "PYTHONPATH=" in r.stdout and "OMP_NUM_THREADS=" in r.stdout
    r = sb.exec(["no-such-program"])
    assert r.exit_code == 127


@pytest.mark.docker
@skip_no_engine
def test_workspace_files_stay_the_host_users(open_docker):
    sb = open_docker()
    ws = sb.workspace
    # Host-made files and folders, even private ones, are writable from the sandbox...
    (ws / "data").mkdir(mode=0o700)
    (ws / "data" / "old.txt").write_text("old")
    os.chmod(ws / "data" / "old.txt", 0o600)
    r = sb.exec(["sh", "-c", "echo new > data/old.txt && mkdir -p out/deep && "
                 "echo result > out/deep/r.txt && chmod 700 out && echo done"])
    assert r.stdout.strip() == "done", r.stderr
    # ...and what the sandbox writes, the host user reads, changes and deletes.
    assert (ws / "data" / "old.txt").read_text() == "new\n"
    assert (ws / "out" / "deep" / "r.txt").read_text() == "result\n"
    (ws / "out" / "deep" / "r.txt").write_text("host edit")
    (ws / "out" / "deep" / "host.txt").write_text("host file")
    r = sb.exec(["cat", "out/deep/r.txt", "out/deep/host.txt"])
    assert r.stdout == "host edithost file"
    shutil.rmtree(ws / "out")
    assert not (ws / "out").exists()
    r = sb.exec(["sh", "-c", "mkdir -p late/x && echo z > late/x/z.txt"])
    assert r.ok
    sb.close()  # once closed, everything in the workspace is the host user's again
    for p in [ws, *ws.rglob("*")]:
        assert p.lstat().st_uid == os.getuid(), p


@pytest.mark.docker
@skip_no_engine
def test_workspace_handover_does_not_follow_links_out(open_docker, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("host only")
    before = outside.stat()
    sb = open_docker()
    os.symlink(outside, sb.workspace / "link")
    os.symlink(tmp_path, sb.workspace / "dirlink")
    r = sb.exec(["sh", "-c", "cat link 2>&1; echo x > link 2>&1; ls dirlink 2>&1"])
    assert "host only" not in r.stdout
    after = outside.stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid,
                                                           before.st_mode)
    assert outside.read_text() == "host only"


# ---------------------------------------------------------------- limits


@pytest.mark.docker
@skip_no_engine
def test_oom_is_reported_as_oom(open_docker):
    sb = open_docker(SandboxLimits(memory_mb=200, timeout=60))
    (sb.workspace / "bomb.py").write_text(
        "chunks = []\nwhile True:\n    chunks.append(bytearray(32 << 20))\n")
    r = sb.exec([sb.python, "bomb.py"])
    assert r.oom_killed and not r.timed_out and r.exit_code == 137 and not r.ok
    # A child killed for memory counts too, even when its parent exits normally...
    r = sb.exec([sb.python, "-c", "import subprocess, sys; "
                 "print(subprocess.run([sys.executable, 'bomb.py']).returncode)"])
    assert r.oom_killed and r.stdout.strip() == "-9"
    # ...but a plain SIGKILL is not an OOM, and the sandbox keeps working after one.
    r = sb.exec(["sh", "-c", "kill -9 $$"])
    assert r.exit_code == 137 and not r.oom_killed
    r = sb.exec([sb.python, "-c", "print(sum(range(10)))"])
    assert r.ok and r.stdout == "45\n"


@pytest.mark.docker
@skip_no_engine
def test_timeout_kills_everything_the_command_started(open_docker):
    marker = "tree-" + os.urandom(4).hex()
    sb = open_docker(SandboxLimits(timeout=60))
    (sb.workspace / "tree.py").write_text(textwrap.dedent(f"""
        import subprocess, sys, time
        sleeper = [sys.executable, "-c", "import time; time.sleep(300)", {marker!r}]
        subprocess.Popen(sleeper)                          # a child
        subprocess.Popen(sleeper, start_new_session=True)  # a daemon in its own session
        subprocess.Popen(["sh", "-c", "sleep 300 & sleep 300; : {marker}"])  # grandchildren
        print("started", flush=True)
        time.sleep(300)
    """))
    t0 = time.perf_counter()
    r = sb.exec([sb.python, "tree.py"], timeout=3)
    assert r.timed_out and not r.ok
    assert time.perf_counter() - t0 < 60  # killed at its 3 s timeout, not after the 300 s sleep
    assert "started" in r.stdout
    assert survivors(marker) == []
    # Nothing but the container's init is left inside, and the sandbox still works.
    r = sb.exec(["ps", "-eo", "pid=,args="])
    procs = r.stdout.strip().splitlines()
    assert marker not in r.stdout
    assert len(procs) == 2, procs  # the container's init (the supervisor) and ps


@pytest.mark.docker
@skip_no_engine
def test_fork_bomb_past_timeout_replaces_the_container(open_docker):
    sb = open_docker(SandboxLimits(pids=32, timeout=60))
    (sb.workspace / "bomb.py").write_text(textwrap.dedent("""
        import os, time
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    """))
    r = sb.exec([sb.python, "bomb.py"], timeout=3)
    assert r.timed_out
    r = sb.exec(["echo", "alive"])
    assert r.ok and r.stdout == "alive\n"


@pytest.mark.docker
@skip_no_engine
def test_a_container_killed_while_idle_is_replaced_at_the_next_command(open_docker, engine):
    sb = open_docker()
    first = sb.container_id
    engine.api.kill(first)  # its supervisor dies; the engine removes it
    r = sb.exec(["echo", "alive"])
    assert r.ok and r.stdout == "alive\n", r
    assert sb.container_id != first


@pytest.mark.docker
@skip_no_engine
def test_the_probe_finds_docker_contained(engine):
    """What `labcoat sandbox check` reports for docker: an unprivileged host uid, no user
    namespace needed for that, /proc/sys read-only, PID 1 untraceable, no nested namespaces."""
    from sandbox.probe import probe

    found = probe("docker")
    assert found.ran and found.contained, found
    if os.getuid() == 0:  # a uid leased for that sandbox from labcoat's reserved range
        from sandbox.ownership import id_range

        assert found.host_uids[1] in id_range() and found.io_uring is False, found
    else:
        assert found.host_uids[1] == os.getuid()


@pytest.mark.docker
@skip_no_engine
def test_output_is_capped_keeping_head_and_tail(open_docker):
    sb = open_docker(SandboxLimits(output_bytes=4096, timeout=60))
    r = sb.exec(["sh", "-c", "echo FIRST; head -c 5000000 /dev/zero | tr '\\0' x; echo; "
                 "echo LAST; echo E >&2"])
    assert r.truncated
    assert r.stdout.startswith("FIRST") and r.stdout.rstrip().endswith("LAST")
    assert len(r.stdout) < 8192
    assert r.stderr == "E\n"


# ---------------------------------------------------------------- lifecycle


@pytest.mark.docker
@skip_no_engine
def test_close_removes_the_container(open_docker, engine):
    sb = open_docker()
    run_id = sb.run_id
    assert _ours(engine, run_id)
    sb.close()
    sb.close()  # idempotent
    assert _wait_gone(engine, run_id)
    with pytest.raises(SandboxError):
        sb.exec(["true"])


def _wait_gone(engine, run_id: str, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _ours(engine, run_id):
            return True
        time.sleep(0.1)
    return False


def _kill_a_host(engine, ws: Path, command: str) -> str:
    """A process that opens a DockerSandbox, starts ``command`` in it and is SIGKILLed (no
    close(), no atexit, no finalizer) while that runs or after it ended; its run id."""
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import threading, time
            from sandbox.docker import DockerSandbox
            sb = DockerSandbox({str(ws)!r})
            threading.Thread(target=sb.exec, args=(["sh", "-c", {command!r}],)).start()
            time.sleep(0.5)
            print(sb.run_id, flush=True)
            time.sleep(600)
        """)],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    run_id = child.stdout.readline().strip()
    assert run_id and _ours(engine, run_id)
    child.send_signal(signal.SIGKILL)
    child.wait()
    return run_id


@pytest.mark.docker
@skip_no_engine
def test_a_killed_run_leaves_no_container_after_the_next_start(tmp_path, engine, open_docker):
    ws = tmp_path / "killed-ws"
    ws.mkdir()
    run_id = _kill_a_host(engine, ws, "sleep 600 &")
    open_docker()  # the next start
    assert _wait_gone(engine, run_id), "the killed run's container is still there"


@pytest.mark.docker
@skip_no_engine
def test_the_container_goes_with_its_host_process(tmp_path, engine):
    """Killed mid-command, with nothing started after: the supervisor sees its socket's EOF,
    kills the command and exits, the container stops and the engine removes it."""
    ws = tmp_path / "killed-ws"
    ws.mkdir()
    run_id = _kill_a_host(engine, ws, "sleep 600 & sleep 600")
    assert _wait_gone(engine, run_id, 30), "the container outlived its host process"


@pytest.mark.docker
@skip_no_engine
def test_next_start_sweeps_stale_labelled_containers(engine, open_docker):
    """A container whose owner died without closing it (and whose init kept running)."""
    from sandbox.docker import (
        LABEL,
        LABEL_BOOT,
        LABEL_HOST,
        LABEL_PID,
        LABEL_PID_START,
        LABEL_RUN,
        _boot_id,
    )
    from sandbox.image import IMAGE, SANDBOX_PYTHON

    dead = subprocess.Popen(["true"])
    dead.wait()
    import socket

    stale = engine.containers.run(
        IMAGE, [SANDBOX_PYTHON, "-c", "import time; time.sleep(600)"], detach=True,
        network_mode="none", labels={LABEL: "1", LABEL_RUN: "stale-test", LABEL_PID: str(dead.pid),
                                     LABEL_PID_START: "1", LABEL_HOST: socket.gethostname(),
                                     LABEL_BOOT: _boot_id()})
    foreign = engine.containers.run(
        IMAGE, [SANDBOX_PYTHON, "-c", "import time; time.sleep(600)"], detach=True,
        network_mode="none", labels={LABEL: "1", LABEL_RUN: "foreign-test", LABEL_PID: "1",
                                     LABEL_HOST: "some-other-host"})
    try:
        open_docker()
        assert not _ours(engine, "stale-test")
        assert _ours(engine, "foreign-test"), "a container of another host was removed"
    finally:
        for c in (stale, foreign):
            try:
                c.remove(force=True)
            except Exception:
                pass


@pytest.mark.docker
@skip_no_engine
def test_auto_picks_docker_and_check_reports_engine_and_image(engine):
    from typer.testing import CliRunner

    from tui.cli.sandbox import app

    assert resolve_kind("auto") == "docker"
    result = CliRunner().invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    assert "docker engine:" in result.output and "sandbox image:" in result.output
    assert "auto uses: docker" in result.output
    result = CliRunner().invoke(app, ["check", "--json"])
    import json

    data = json.loads(result.output)
    docker_report = next(b for b in data["backends"] if b["backend"] == "docker")
    assert docker_report["available"] and docker_report["process_tree_kill"]
    assert data["docker"]["image"]["packages"]["numpy"] == md.version("numpy")


@pytest.mark.docker
@skip_no_engine
def test_missing_image_makes_docker_unavailable(engine, monkeypatch, tmp_path):
    import sandbox.docker as sd

    monkeypatch.setattr(sd, "IMAGE", "labcoat-sandbox:no-such-tag")
    iso = sd.DockerSandbox.isolation()
    assert not iso.available and "build --offline" in iso.detail
    (tmp_path / "ws").mkdir()
    with pytest.raises(SandboxError, match="build --offline"):
        sd.DockerSandbox(tmp_path / "ws", image="labcoat-sandbox:no-such-tag")


@pytest.mark.docker
@pytest.mark.slow
@skip_no_engine
def test_offline_builder_makes_a_working_image_from_the_host_python(engine, tmp_path):
    """The offline recipe end to end, on a small image (stdlib + pydantic, no torch)."""
    from sandbox.image import build_offline, image_info

    tag = "labcoat-sandbox-selftest:tiny"
    try:
        report = build_offline(tag, packages=("pydantic",))
        assert report.kind == "offline" and report.import_seconds > 0
        assert "pydantic" in report.packages and "torch" not in report.packages
        info = image_info(tag)
        assert info and info["kind"] == "offline" and info["python"] == sys.version.split()[0]
        out = engine.containers.run(
            tag, ["/usr/local/bin/python", "-c",
                  "import sys, json, sqlite3, ssl, pydantic; print(sys.version.split()[0])"],
            remove=True, network_mode="none", read_only=True, user="65534:65534")
        assert out.decode().strip() == sys.version.split()[0]
        out = engine.containers.run(tag, ["sh", "-c", "echo $((6*7)); ls / | wc -l"],
                                    remove=True, network_mode="none")
        assert out.decode().split()[0] == "42"
    finally:
        try:
            engine.images.remove(tag, force=True)
        except Exception:
            pass


# ---------------------------------------------------------------- without an engine


def test_no_engine_means_unavailable_and_auto_falls_back(monkeypatch):
    """Runs everywhere: point the SDK at a socket nobody listens on."""
    pytest.importorskip("docker")
    import sandbox.image as si
    from sandbox.docker import DockerSandbox

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/labcoat-docker.sock")
    si._client.cache_clear()
    try:
        iso = DockerSandbox.isolation()
        assert not iso.available and "no Docker engine answers" in iso.detail
        assert resolve_kind("auto") == "local"
        from typer.testing import CliRunner

        from tui.cli.sandbox import app

        result = CliRunner().invoke(app, ["build", "--offline"])
        assert result.exit_code == 1 and "no Docker engine answers" in result.output
    finally:
        si._client.cache_clear()
