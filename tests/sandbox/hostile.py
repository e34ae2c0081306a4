"""The hostile-script suite: scripts that try to escape, written once for every backend.

Each case is a Python script run through ``Sandbox.exec`` and a check that it was contained.
``tests/sandbox/test_hostile.py`` runs every case on every backend that claims the isolation
the case needs; a backend added later only has to join that parametrisation.
"""

from __future__ import annotations

import os
import socket
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import ExecResult, Sandbox


@dataclass
class Context:
    """Host-side things a case probes: a secret env var, a host folder, a loopback server."""

    host_dir: Path
    secret: str
    port: int
    marker: str


@dataclass
class Case:
    name: str
    script: Callable[[Context], str]
    check: Callable[[ExecResult, Context], None]
    needs: tuple[str, ...] = ()
    limits: dict = field(default_factory=dict)


def survivors(marker: str) -> list[str]:
    """Live host processes whose command line carries ``marker`` (should be none after exec).

    Read from /proc, not ``ps``: without a terminal ``ps`` cuts lines at 80 columns, past
    which a marker at the end of a long command line would go unseen.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if marker in args and state != "Z":
            found.append(f"{entry.name} {args}")
    return found


def _net(ctx: Context) -> str:
    return f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {ctx.port}), timeout=3).sendall(b"escaped")
            print("CONNECTED")
        except OSError as e:
            print("refused", e)
        try:
            print("RESOLVED", socket.getaddrinfo("pypi.org", 443)[0][4])
        except OSError as e:
            print("no dns", e)
    """


def _check_net(r: ExecResult, ctx: Context) -> None:
    assert "CONNECTED" not in r.stdout, r.stdout
    assert "RESOLVED" not in r.stdout, r.stdout


def _write_out(ctx: Context) -> str:
    return f"""
        import os
        for p in [{str(ctx.host_dir / "pwned")!r}, "/usr/pwned", "/etc/pwned", "/pwned",
                  "/workspace/../pwned"]:
            try:
                open(p, "w").write("x"); print("WROTE", p)
            except OSError as e:
                print("denied", p, e.errno)
    """


def _check_write_out(r: ExecResult, ctx: Context) -> None:
    assert list(ctx.host_dir.iterdir()) == [], "a file appeared outside the workspace"
    for p in ("/usr/pwned", "/etc/pwned", "/pwned"):
        assert not Path(p).exists()


def _env_home(ctx: Context) -> str:
    return f"""
        import os
        print(sorted(os.environ.items()))
        for p in [{str(ctx.host_dir)!r}, os.path.expanduser("~"), "/root"]:
            try:
                print(p, os.listdir(p))
            except OSError as e:
                print("no", p, e.errno)
        try:
            print(open({str(ctx.host_dir / "secret.txt")!r}).read())
        except OSError as e:
            print("no secret file", e.errno)
    """


def _check_env_home(r: ExecResult, ctx: Context) -> None:
    assert ctx.secret not in r.stdout + r.stderr


def _fork_bomb(ctx: Context) -> str:
    return f"""
        import os, sys, time
        sys.argv.append({ctx.marker!r})
        n = 0
        while True:
            try:
                if os.fork() == 0:
                    time.sleep(0.05)
                    continue
                n += 1
            except OSError:
                time.sleep(0.01)
    """


def _check_tree_gone(r: ExecResult, ctx: Context) -> None:
    assert r.timed_out or r.exit_code != 0
    assert survivors(ctx.marker) == []


def _memory_bomb(ctx: Context) -> str:
    return """
        chunks = []
        while True:
            chunks.append(bytearray(64 << 20))
    """


def _check_oom(r: ExecResult, ctx: Context) -> None:
    assert r.exit_code != 0
    assert r.oom_killed, r


def _busy(ctx: Context) -> str:
    return f"""
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c", "while True: pass", {ctx.marker!r}])
        while True:
            pass
    """


def _check_timeout(r: ExecResult, ctx: Context) -> None:
    assert r.timed_out
    assert r.seconds < 30
    assert survivors(ctx.marker) == []


def _flood(ctx: Context) -> str:
    return """
        import sys
        block = b"x" * (1 << 20)
        for _ in range(1024):
            sys.stdout.buffer.write(block)
        print("END")
    """


def _check_flood(r: ExecResult, ctx: Context) -> None:
    assert r.truncated
    assert len(r.stdout) < 2 * 64 * 1024
    assert r.stdout.rstrip().endswith("END")


def _daemon(ctx: Context) -> str:
    return f"""
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", {ctx.marker!r}],
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        print("parent exits")
    """


def _check_daemon(r: ExecResult, ctx: Context) -> None:
    assert r.exit_code == 0
    assert survivors(ctx.marker) == []


def _symlink(ctx: Context) -> str:
    return f"""
        import os
        os.symlink({str(ctx.host_dir / "secret.txt")!r}, "link.txt")
        try:
            print(open("link.txt").read())
        except OSError as e:
            print("no", e.errno)
    """


CASES = [
    Case("network-and-dns", _net, _check_net, needs=("network",)),
    Case("write-outside-workspace", _write_out, _check_write_out, needs=("filesystem",)),
    Case("host-env-and-home", _env_home, _check_env_home, needs=("filesystem",)),
    Case("fork-bomb", _fork_bomb, _check_tree_gone, needs=("pids",),
         limits={"pids": 64, "timeout": 5}),
    Case("memory-bomb", _memory_bomb, _check_oom, needs=("memory",),
         limits={"memory_mb": 256, "timeout": 60}),
    Case("busy-loop-past-timeout", _busy, _check_timeout, needs=("process_tree_kill",),
         limits={"timeout": 2}),
    Case("gigabyte-of-output", _flood, _check_flood, limits={"output_bytes": 64 * 1024}),
    Case("daemon-outlives-parent", _daemon, _check_daemon, needs=("process_tree_kill",)),
    Case("symlink-to-host-file", _symlink, _check_env_home, needs=("filesystem",)),
]


def run_case(sandbox: Sandbox, case: Case, ctx: Context) -> ExecResult:
    script = textwrap.dedent(case.script(ctx))
    (sandbox.workspace / "hostile.py").write_text(script)
    return sandbox.exec([sandbox.python, "hostile.py"])


class LoopbackListener:
    """A host TCP listener on 127.0.0.1 that records whether anything connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connected = False
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connected = True
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2)
        self.sock.close()


def secret_env_name() -> str:
    return "LABCOAT_HOSTILE_TEST_API_KEY"


def make_context(tmp: Path, port: int) -> Context:
    host_dir = tmp / "host-only"
    host_dir.mkdir()
    secret = "sk-hostile-" + os.urandom(6).hex()
    return Context(host_dir=host_dir, secret=secret, port=port, marker="hostile-" + os.urandom(4).hex())
