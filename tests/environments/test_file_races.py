"""Host-side file actions raced by a process left in the sandbox.

A real racer (a subprocess calling ``renameat2(RENAME_EXCHANGE)`` in a loop) swaps a workspace
name between a regular file and a symlink to a host file (or a workspace folder and a symlink
to a host folder) while the host does thousands of Read File / Write File / Append File / Copy
File calls. Not one of them may read or write the host file. The racer reports how many swaps
it made, so a racer that never ran cannot make the test pass.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from environments.acting.environment import Environment
from tests.environments.test_environment import env  # noqa: F401 - the fixture

SECRET = "HOST-SECRET-CONTENT"
ROUNDS = 2000

RACER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = sys.argv[1].encode(), sys.argv[2].encode()
swaps = 0
def done(*_):
    print(swaps, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
while True:
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
        swaps += 1
"""


class Racer:
    """A subprocess that keeps exchanging two names in ``cwd`` until stopped."""

    def __init__(self, cwd: Path, a: str, b: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", RACER, a, b], cwd=cwd,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> int:
        """Stop the racer; the number of swaps it made."""
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate()
        return int(out.strip())


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host folder holding a secret the sandbox must never reach."""
    d = tmp_path / "host"
    d.mkdir()
    (d / "secret.txt").write_text(SECRET)
    return d


def _leaf_race(env: Environment, host: Path) -> tuple[str, Racer]:
    """``target.txt`` swaps with a symlink to the host's secret file."""
    (env.workspace / "target.txt").write_text("workspace content\n")
    os.symlink(host / "secret.txt", env.workspace / "swap")
    return "target.txt", Racer(env.workspace, "target.txt", "swap")


def _parent_race(env: Environment, host: Path) -> tuple[str, Racer]:
    """The folder ``d`` swaps with a symlink to the host folder (``d/secret.txt`` exists in both)."""
    (env.workspace / "d").mkdir()
    (env.workspace / "d" / "secret.txt").write_text("workspace content\n")
    os.symlink(host, env.workspace / "swap")
    return "d/secret.txt", Racer(env.workspace, "d", "swap")


RACES = {"leaf": _leaf_race, "parent": _parent_race}


@pytest.mark.parametrize("race", sorted(RACES))
def test_raced_reads_never_return_a_host_file(env, host, race):
    name, racer = RACES[race](env, host)
    leaked = ok = 0
    try:
        for _ in range(ROUNDS):
            obs = env.execute("Read File", {"file_name": name})
            leaked += SECRET in obs.text
            ok += not obs.error
    finally:
        swaps = racer.stop()
    assert swaps > 0
    assert leaked == 0, f"{leaked} of {ROUNDS} reads returned the host file ({swaps} swaps, {ok} ok)"


@pytest.mark.parametrize("race", sorted(RACES))
@pytest.mark.parametrize("action", ["Write File", pytest.param("Append File", marks=pytest.mark.slow),
                                    pytest.param("Copy File", marks=pytest.mark.slow)])  # one writer in the fast set
def test_raced_writes_never_touch_a_host_file(env, host, race, action):
    name, racer = RACES[race](env, host)
    secret = host / "secret.txt"
    args = ({"source": "train.py", "destination": name} if action == "Copy File"
            else {"file_name": name, "content": "PWNED"})
    hits = 0
    try:
        for _ in range(ROUNDS):
            env.execute(action, args)
            if secret.read_text() != SECRET:
                hits += 1
                secret.write_text(SECRET)
    finally:
        swaps = racer.stop()
    assert swaps > 0
    assert hits == 0, f"{hits} of {ROUNDS} {action} calls wrote the host file ({swaps} swaps)"
    assert sorted(os.listdir(host)) == ["secret.txt"]  # no temp file left in the host folder
