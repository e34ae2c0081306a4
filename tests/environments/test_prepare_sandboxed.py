"""A task folder's own ``prepare.py`` is untrusted code (Trust III, finding 3).

Task folders come from the internet (MLAgentBench's, a colleague's), and ``labcoat run FOLDER``
prepares them first. The hostile prepare.py here tries what host code could do: write a file
outside its copy, read the person's ``$HOME`` (by the variable and by its host path), open a
TCP connection to a loopback port a test server listens on, and read credentials from the
environment. It records what worked in its own copy, which the host reads back afterwards.
Run as root (as CI does), on every isolating backend.
"""

from __future__ import annotations

import json
import os
import socket
import textwrap
import threading
from pathlib import Path

import pytest

from environments.task.prepare import prepare_task
from environments.task.spec import TaskError, load_task
from sandbox.base import clean_env
from tests.conftest import write_task
from tests.sandbox.backends import docker_marks, require_nat
from tests.sandbox.test_network_outbound import host_address

BACKENDS = pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=docker_marks)])

ATTACK = textwrap.dedent("""
    import json, os, socket
    from pathlib import Path
    got = {{"uid": os.getuid()}}
    try:
        Path({marker!r}).write_text("prepare.py was here")
        got["wrote_outside"] = True
    except OSError as err:
        got["wrote_outside"] = str(err)
    for key, path in (("home_by_env", Path(os.environ.get("HOME", "/nonexistent"), "secret.txt")),
                      ("home_by_path", Path({secret!r}))):
        try:
            got[key] = path.read_text()
        except OSError as err:
            got[key] = None
    try:
        with socket.create_connection(("{addr}", {port}), timeout=5) as s:
            s.sendall(b"hello from prepare.py")
        got["tcp"] = True
    except OSError as err:
        got["tcp"] = str(err)
    try:  # the host process's own environment, through /proc
        got["host_environ"] = "sk-fake-host-key" in open("/proc/{pid}/environ").read()
    except OSError:
        got["host_environ"] = False
    got["env"] = {{k: os.environ.get(k) for k in
                  ("KAGGLE_KEY", "LABCOAT_TEST_DECLARED", "OPENAI_API_KEY", "LABCOAT_TEST_UNDECLARED")}}
    Path(__file__).with_name("got.json").write_text(json.dumps(got))
    (Path(__file__).parent.parent / "env" / "data.txt").write_text("10 20 30\\n")
""")


class Listener:
    """A loopback TCP server that records whether anyone connected."""

    def __init__(self, addr: str = "127.0.0.1") -> None:
        self.sock = socket.create_server((addr, 0))
        self.port = self.sock.getsockname()[1]
        self.heard: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            while True:
                conn, _ = self.sock.accept()
                with conn:
                    self.heard.append(conn.recv(100))
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A fake person: HOME with a secret, credentials in the environment, a listening port."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("the person's secret")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-host-key")
    monkeypatch.setenv("KAGGLE_KEY", "fake-kaggle-key")
    monkeypatch.setenv("LABCOAT_TEST_DECLARED", "declared-value")
    monkeypatch.setenv("LABCOAT_TEST_UNDECLARED", "undeclared-value")
    listener = Listener()
    yield {"home": home, "listener": listener, "marker": tmp_path / "outside" / "marker.txt"}
    listener.close()


def hostile_task(root: Path, host: dict, toml_extra: str = "", listener: Listener | None = None) -> Path:
    listener = listener or host["listener"]
    host["marker"].parent.mkdir(exist_ok=True)
    toml = 'metric = "total"\ndirection = "higher"\nbaseline = 6.0\n' + toml_extra
    return write_task(root, toml=toml, files={"scripts/prepare.py": ATTACK.format(
        marker=str(host["marker"]), secret=str(host["home"] / "secret.txt"),
        addr=listener.sock.getsockname()[0], port=listener.port, pid=os.getpid())})


def prepared(root: Path, tmp_path: Path, sandbox: str, lines: list[str] | None = None):
    lines = [] if lines is None else lines
    spec = prepare_task(load_task(root), cache=tmp_path / "cache", sandbox=sandbox,
                        stdin=None, show=lines.append)
    return spec, json.loads((spec.scripts_dir / "got.json").read_text())


@BACKENDS
def test_a_hostile_prepare_reaches_nothing_of_the_host(tmp_path, host, sandbox):
    lines: list[str] = []
    spec, got = prepared(hostile_task(tmp_path / "evil", host), tmp_path, sandbox, lines)
    assert got["wrote_outside"] is not True and not host["marker"].exists()
    assert got["home_by_env"] is None and got["home_by_path"] is None
    assert got["tcp"] is not True and host["listener"].heard == []
    assert got["env"] == dict.fromkeys(got["env"])  # no credential, nothing undeclared
    assert got["host_environ"] is False
    if os.geteuid() == 0:
        assert got["uid"] != 0
    # ...and what it wrote in its own copy is the host's to read, as before
    assert (spec.env_dir / "data.txt").read_text() == "10 20 30\n"
    assert all(p.stat().st_uid == os.geteuid() for p in spec.root.rglob("*"))
    said = "".join(lines)
    assert "prepare.py" in said and sandbox in said


@BACKENDS
def test_declared_network_and_environment_reach_prepare_only(tmp_path, host, sandbox, monkeypatch):
    require_nat()
    declared = '[prepare]\nnetwork = true\nenv = ["KAGGLE_KEY", "LABCOAT_TEST_DECLARED"]\n'
    monkeypatch.setenv("LABCOAT_PASS_ENV", "KAGGLE_KEY,LABCOAT_TEST_DECLARED")  # the person allows
    # outbound only (Trust IV): the host's own address stands for the outside world; its
    # loopback is out of reach (tests/sandbox/test_network_outbound.py)
    outside = Listener(host_address())
    try:
        spec, got = prepared(hostile_task(tmp_path / "net", host, declared, outside), tmp_path, sandbox)
    finally:
        outside.close()
    assert got["tcp"] is True and outside.heard == [b"hello from prepare.py"]
    assert got["env"] == {"KAGGLE_KEY": "fake-kaggle-key", "LABCOAT_TEST_DECLARED": "declared-value",
                          "OPENAI_API_KEY": None, "LABCOAT_TEST_UNDECLARED": None}
    assert got["wrote_outside"] is not True and got["home_by_path"] is None
    assert spec.prepare.network and spec.prepare.env == ["KAGGLE_KEY", "LABCOAT_TEST_DECLARED"]


def test_actors_commands_never_get_a_declared_credential():
    """What passes a credential-looking name is the prepare's sandbox only; the default drops it."""
    assert "KAGGLE_KEY" not in clean_env({"KAGGLE_KEY": "x"}, 1, "")
    assert clean_env({"KAGGLE_KEY": "x"}, 1, "", allow=("KAGGLE_KEY",))["KAGGLE_KEY"] == "x"


def test_prepare_asks_the_person_and_shows_what_it_prints(tmp_path):
    """Input relayed from the terminal (here a pipe standing in for it), output shown as it comes."""
    ask = 'from pathlib import Path\nanswer = input("continue? ")\nPath("answer.txt").write_text(answer)\n'
    root = write_task(tmp_path / "ask", files={"scripts/prepare.py": ask})
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"yes please\n")
    lines: list[str] = []
    try:
        spec = prepare_task(load_task(root), cache=tmp_path / "cache", sandbox="local",
                            stdin=read_fd, show=lines.append)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert (spec.scripts_dir / "answer.txt").read_text() == "yes please"
    assert "continue? " in "".join(lines)


def test_without_a_terminal_prepare_reads_nothing_and_a_failure_says_why(tmp_path):
    ask = 'print("about to ask")\ninput("continue? ")\n'
    root = write_task(tmp_path / "ask", files={"scripts/prepare.py": ask})
    with pytest.raises(TaskError, match=r"(?s)prepare.py failed.*EOFError"):
        prepare_task(load_task(root), cache=tmp_path / "cache", sandbox="local", stdin=None,
                     show=lambda text: None)
    assert not list((tmp_path / "cache").glob("ask-*"))  # nothing half-prepared is kept


@pytest.mark.parametrize("bad, why", [
    ('[prepare]\nenv = ["not a name"]\n', "prepare.env"),
    ('[prepare]\nnetwork = "yes"\n', "prepare.network"),
    ('[prepare]\nshell = true\n', "prepare.shell"),
])
def test_the_prepare_table_is_checked(tmp_path, bad, why):
    root = write_task(tmp_path / "t", toml='metric = "total"\n' + bad)
    with pytest.raises(TaskError, match=why):
        load_task(root)
