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


def take_over_pid1(ctx: Context) -> str:
    """Make PID 1 ``execve`` a shell loop carrying the marker: attach with ptrace, poke a
    ``syscall`` instruction and execve's arguments at its instruction pointer, set the
    registers, detach. A PID 1 that can be traced becomes the payload (and an init that the
    after-command kill spares keeps it alive). x86-64 only; elsewhere it reports "no-arch"."""
    return f"""
        import ctypes, os, platform, struct, time
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        libc.ptrace.restype = ctypes.c_long
        NAMES = ("r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs "
                 "eflags rsp ss fs_base gs_base ds es fs gs").split()

        class Regs(ctypes.Structure):
            _fields_ = [(n, ctypes.c_ulonglong) for n in NAMES]

        def take_over(pid, cmd):
            if platform.machine() != "x86_64":
                return "no-arch"
            if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
                return f"attach refused {{ctypes.get_errno()}}"
            os.waitpid(pid, 0x40000000)  # __WALL
            regs = Regs()
            libc.ptrace(12, pid, None, ctypes.byref(regs))  # PTRACE_GETREGS
            blob, addrs = bytearray(b"\\x0f\\x05" + b"\\x90" * 6), []  # syscall; nops
            for s in (b"/bin/sh", b"-c", cmd.encode()):
                addrs.append(regs.rip + len(blob))
                blob += s + b"\\0" * (8 - len(s) % 8)
            argv_at = regs.rip + len(blob)
            blob += struct.pack("<4Q", *addrs, 0)
            for off in range(0, len(blob), 8):
                word = struct.unpack("<Q", bytes(blob[off:off + 8]))[0]
                libc.ptrace(5, pid, ctypes.c_void_p(regs.rip + off), ctypes.c_void_p(word))
            regs.rax, regs.rdi, regs.rsi, regs.rdx = 59, addrs[0], argv_at, 0  # execve
            regs.orig_rax = (1 << 64) - 1  # no syscall restart
            libc.ptrace(13, pid, None, ctypes.byref(regs))  # PTRACE_SETREGS
            libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
            return "injected"

        print("ATTEMPT", take_over(1, "while :; do sleep 1; done; : {ctx.marker}"))
        time.sleep(0.5)
        print("PID1", open("/proc/1/cmdline", "rb").read().replace(b"\\0", b" ").decode())
    """


def _check_pid1_kept(r: ExecResult, ctx: Context) -> None:
    assert "ATTEMPT" in r.stdout and "PID1" in r.stdout, (r.stdout, r.stderr)
    assert "ATTEMPT injected" not in r.stdout, r.stdout
    assert ctx.marker not in r.stdout, r.stdout


CASES = [
    Case("network-and-dns", _net, _check_net, needs=("network",)),
    Case("write-outside-workspace", _write_out, _check_write_out, needs=("filesystem",)),
    Case("host-env-and-home", _env_home, _check_env_home, needs=("filesystem",)),
    Case("fork-bomb", _fork_bomb, _check_tree_gone, needs=("pids",),
         limits={"pids": 64, "timeout": 2}),  # 64 processes take milliseconds to reach
    Case("memory-bomb", _memory_bomb, _check_oom, needs=("memory",),
         limits={"memory_mb": 256, "timeout": 60}),
    Case("busy-loop-past-timeout", _busy, _check_timeout, needs=("process_tree_kill",),
         limits={"timeout": 2}),
    Case("gigabyte-of-output", _flood, _check_flood, limits={"output_bytes": 64 * 1024}),
    Case("daemon-outlives-parent", _daemon, _check_daemon, needs=("process_tree_kill",)),
    Case("symlink-to-host-file", _symlink, _check_env_home, needs=("filesystem",)),
    Case("pid-1-takeover", take_over_pid1, _check_pid1_kept, needs=("unprivileged_user",)),
    Case("file-past-the-size-cap", lambda ctx: _fill_disk(), lambda r, ctx: _check_capped(r),
         needs=("filesystem",), limits={"file_mb": 2}),
]


def _fill_disk() -> str:
    """Write past the cap, densely and as a sparse file (a seek past the end, then one byte)."""
    return """
        import os, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # see EFBIG instead of dying
        out = []
        try:
            with open("big.bin", "wb") as f:
                for _ in range(8):
                    f.write(b"x" * (1 << 20))
            out.append("dense written")
        except OSError as e:
            out.append(f"dense refused {e.errno}")
        try:
            with open("sparse.bin", "wb") as f:
                f.seek(1 << 40)
                f.write(b"x")
            out.append("sparse written")
        except OSError as e:
            out.append(f"sparse refused {e.errno}")
        print(out, os.path.getsize("big.bin"))
    """


def _check_capped(r: ExecResult) -> None:
    assert "written" not in r.stdout, r.stdout
    assert int(r.stdout.split()[-1]) <= 2 << 20, r.stdout


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
