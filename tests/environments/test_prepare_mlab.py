"""Preparing like MLAgentBench (issue 28): its ``scripts/prepared`` marker honoured, its
prompts shown to the person before it waits, the declared variables passed (named, never
shown), and a prepare.py that exits 0 having produced nothing reported, not cached.

Folders are built here, shaped like MLAgentBench's (a Kaggle-style consent prompt, a download
that fails quietly); no MLAgentBench file is needed.
"""

from __future__ import annotations

import json
import os
import threading

import pytest

from environments.task.prepare import (
    files_of,
    fingerprint,
    prepare_task,
    prepared_dir,
    produced,
)
from environments.task.spec import TaskError, check_folder, load_task
from tests.conftest import write_task
from tests.sandbox.backends import docker_marks

BACKENDS = pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=docker_marks)])
KAGGLE_TOML = ('metric = "total"\n[prepare]\nenv = ["KAGGLE_USERNAME", "KAGGLE_KEY", "HF_TOKEN"]\n')
KAGGLE_TOML_ENV = ("KAGGLE_USERNAME", "KAGGLE_KEY", "HF_TOKEN")  # what the person allows (--pass-env)
FAKE_KEY = "0123456789abcdef-fake-kaggle-key"


def prepare(root, tmp_path, **kw):
    kw.setdefault("sandbox", "local")
    kw.setdefault("stdin", None)
    return prepare_task(load_task(root), cache=tmp_path / "cache", **kw)


class Said:
    """A ``show`` that keeps what it is given."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __call__(self, text: str) -> None:
        self.parts.append(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


# ------------------------------------------------------------------ MLAgentBench's marker

def test_a_folder_mlagentbench_prepared_is_used_as_it_is(tmp_path):
    """prepare.py would fail (and would re-split the data): it is not run, and that is said once."""
    root = write_task(tmp_path / "house-price", files={
        "scripts/prepare.py": "raise SystemExit('prepare.py ran again')\n",
        "scripts/prepared": "success"})
    said = Said()
    first = prepare(root, tmp_path, show=said)
    again = prepare(root, tmp_path, show=said)
    assert first.root == again.root == root.resolve()
    assert said.text.count("prepared by MLAgentBench") == 1 and "not run again" in said.text
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    with pytest.raises(TaskError, match="already prepared this folder"):
        prepare(root, tmp_path, show=said, again=True)


# ------------------------------------------------------------------ prompts reach the person

PROMPTS = {
    # Kaggle's consent, as MLAgentBench's prepare.py files ask it (input() flushes its prompt)
    "input": 'answer = input("Consent to the rules of the competition [y/N] ")\n',
    # a prompt written with no newline and no flush: shown only if stdout is unbuffered
    "write": 'import sys\nsys.stdout.write("Consent to the rules of the competition [y/N] ")\n'
             'answer = sys.stdin.readline().strip()\n',
}
ANSWERED = 'from pathlib import Path\nPath("../env/answer.txt").write_text(answer)\n'


@BACKENDS
@pytest.mark.parametrize("how", sorted(PROMPTS))
def test_a_prompt_without_newline_is_shown_before_prepare_waits(tmp_path, how, sandbox):
    """The person is answered only once the prompt has reached ``show``: a prompt held in a
    buffer would leave prepare.py waiting until its timeout."""
    root = write_task(tmp_path / "kaggle", files={"scripts/prepare.py": PROMPTS[how] + ANSWERED})
    read_fd, write_fd = os.pipe()
    said, answered = Said(), threading.Event()

    def person(text: str) -> None:
        said(text)
        if said.text.endswith("[y/N] ") and not answered.is_set():
            answered.set()
            os.write(write_fd, b"y\n")

    try:
        spec = prepare(root, tmp_path, sandbox=sandbox, stdin=read_fd, show=person, timeout=60)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert answered.is_set()
    assert (spec.env_dir / "answer.txt").read_text().strip() == "y"


def test_without_a_terminal_a_prompt_fails_saying_how_to_answer_it(tmp_path):
    root = write_task(tmp_path / "kaggle", files={"scripts/prepare.py": PROMPTS["input"] + ANSWERED})
    said = Said()
    with pytest.raises(TaskError) as err:
        prepare(root, tmp_path, stdin=None, show=said)
    message = str(err.value)
    assert "asked for input" in message and "no terminal" in message
    assert f"labcoat prepare {root.resolve()}" in message and "in a terminal" in message
    assert "competition [y/N] " in said.text  # the prompt itself was shown
    assert not (prepared_dir(load_task(root), tmp_path / "cache") / ".prepared").exists()


def test_a_failure_that_is_not_a_prompt_says_nothing_of_terminals(tmp_path):
    root = write_task(tmp_path / "broken", files={"scripts/prepare.py": "raise ValueError('bad data')\n"})
    with pytest.raises(TaskError, match="bad data") as err:
        prepare(root, tmp_path, show=Said())
    assert "asked for input" not in str(err.value)


TTY_PROBE = """import json, os, stat
from pathlib import Path
got = {"isatty": os.isatty(0), "fifo": stat.S_ISFIFO(os.fstat(0).st_mode), "line": input()}
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    got["dev_tty"] = True
except OSError:
    got["dev_tty"] = False
Path("../env/tty.json").write_text(json.dumps(got))
"""


@BACKENDS
def test_the_terminal_itself_never_reaches_prepare(tmp_path, sandbox):
    """Given a terminal (a pty here), prepare.py reads a pipe relaying it: a terminal's own
    descriptor would let it change the terminal's modes or push keystrokes (TIOCSTI)."""
    root = write_task(tmp_path / "tty", files={"scripts/prepare.py": TTY_PROBE})
    person, terminal = os.openpty()
    os.write(person, b"typed by the person\n")
    try:
        spec = prepare(root, tmp_path, sandbox=sandbox, stdin=terminal, show=Said(), timeout=60)
    finally:
        os.close(person)
        os.close(terminal)
    got = json.loads((spec.env_dir / "tty.json").read_text())
    assert got == {"isatty": False, "fifo": True, "line": "typed by the person", "dev_tty": False}


# ------------------------------------------------------------------ declared variables

@BACKENDS
def test_declared_variables_are_passed_and_named_never_shown(tmp_path, monkeypatch, sandbox):
    monkeypatch.setenv("KAGGLE_USERNAME", "alice")
    monkeypatch.setenv("KAGGLE_KEY", FAKE_KEY)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    echo = ('import json, os, sys\nfrom pathlib import Path\n'
            'print("key is", os.environ.get("KAGGLE_KEY"))\n'
            'got = {n: os.environ.get(n) for n in ("KAGGLE_USERNAME", "KAGGLE_KEY", "HF_TOKEN")}\n'
            'Path("../env/got.json").write_text(json.dumps(got))\n')
    root = write_task(tmp_path / "kaggle", toml=KAGGLE_TOML, files={"scripts/prepare.py": echo})
    said = Said()
    spec = prepare(root, tmp_path, sandbox=sandbox, show=said, pass_env=KAGGLE_TOML_ENV)
    got = json.loads((spec.env_dir / "got.json").read_text())
    assert got == {"KAGGLE_USERNAME": "alice", "KAGGLE_KEY": FAKE_KEY, "HF_TOKEN": None}
    assert "environment KAGGLE_USERNAME, KAGGLE_KEY" in said.text
    assert "declared but not set here: HF_TOKEN" in said.text
    assert FAKE_KEY not in said.text and "key is [hidden]" in said.text


def test_a_failure_quoting_a_declared_key_hides_it(tmp_path, monkeypatch):
    monkeypatch.setenv("KAGGLE_KEY", FAKE_KEY)
    leak = 'import os, sys\nsys.exit("401 Unauthorized for key " + os.environ["KAGGLE_KEY"])\n'
    root = write_task(tmp_path / "kaggle", toml=KAGGLE_TOML, files={"scripts/prepare.py": leak})
    with pytest.raises(TaskError, match="401 Unauthorized for key \\[hidden\\]") as err:
        prepare(root, tmp_path, show=Said(), pass_env=KAGGLE_TOML_ENV)
    assert FAKE_KEY not in str(err.value)


# ------------------------------------------------------------------ a prepare that produced nothing

QUIET_FAILURE = ('import subprocess, sys\n'  # babylm's way: the tool's failure is ignored, exit 0
                 'print("downloading babylm_data.zip")\n'
                 'subprocess.run([sys.executable, "-c", "raise SystemExit(8)"])\n')


@BACKENDS
def test_a_prepare_that_produced_nothing_fails_is_not_cached_and_runs_again(tmp_path, sandbox):
    root = write_task(tmp_path / "babylm", files={"scripts/prepare.py": QUIET_FAILURE})
    for attempt in (1, 2):
        said = Said()
        with pytest.raises(TaskError, match="added or changed no file") as err:
            prepare(root, tmp_path, sandbox=sandbox, show=said)
        assert "downloading babylm_data.zip" in said.text, attempt  # it ran, both times
        assert "next run prepares again" in str(err.value)
        assert "downloading babylm_data.zip" in str(err.value)  # its output is quoted
        assert not (prepared_dir(load_task(root), tmp_path / "cache")).exists()
        assert not list((tmp_path / "cache").glob(".*.tmp"))


def test_deleting_files_alone_is_not_preparing(tmp_path):
    root = write_task(tmp_path / "babylm", files={
        "scripts/prepare.py": 'import os\nos.remove("../env/data.txt")\n'})
    with pytest.raises(TaskError, match="added or changed no file"):
        prepare(root, tmp_path, show=Said())


def test_answers_written_only_beside_prepare_py_count(tmp_path):
    """A prepare.py that writes its held-out answers in scripts/ and nothing in env/ prepared."""
    root = write_task(tmp_path / "heldout", files={
        "scripts/prepare.py": 'open("answers.csv", "w").write("id,label\\n1,0\\n")\n'})
    spec = prepare(root, tmp_path, show=Said())
    assert (spec.scripts_dir / "answers.csv").exists()


def test_what_counts_as_produced():
    before = {"env/a.csv": (10, 1), "scripts/prepare.py": (5, 1)}
    assert not produced(before, dict(before))
    assert not produced(before, {"scripts/prepare.py": (5, 1)})  # a deletion
    assert produced(before, {**before, "env/b.csv": (0, 2)})  # a new (even empty) file
    assert produced(before, {**before, "env/a.csv": (10, 2)})  # rewritten
    assert produced(before, {**before, "env/a.csv": (11, 1)})


def test_files_of_skips_links_and_pycache(tmp_path):
    (tmp_path / "env" / "__pycache__").mkdir(parents=True)
    (tmp_path / "env" / "__pycache__" / "m.pyc").write_bytes(b"x")
    (tmp_path / "env" / "a.csv").write_text("abc")
    (tmp_path / "env" / "link").symlink_to("a.csv")
    assert set(files_of(tmp_path)) == {"env/a.csv"}


# ------------------------------------------------------------------ preparing again

STAMP = 'import os\nopen("../env/stamp.txt", "w").write(os.urandom(8).hex())\n'


def test_again_discards_the_cached_copy_and_prepares_anew(tmp_path):
    root = write_task(tmp_path / "stamped", files={"scripts/prepare.py": STAMP})
    said = Said()
    first = prepare(root, tmp_path, show=said)
    stamp = (first.env_dir / "stamp.txt").read_text()
    cached = prepare(root, tmp_path, show=said)
    assert (cached.env_dir / "stamp.txt").read_text() == stamp
    assert said.text.count("running stamped's scripts/prepare.py") == 1  # the cache was used
    anew = prepare(root, tmp_path, show=said, again=True)
    assert anew.root == first.root and (anew.env_dir / "stamp.txt").read_text() != stamp
    assert said.text.count("running stamped's scripts/prepare.py") == 2
    assert (anew.root / ".prepared").exists()


def test_again_that_fails_leaves_no_stale_copy(tmp_path, monkeypatch):
    """--again discards first: a failed re-prepare never leaves the old copy for runs to use."""
    root = write_task(tmp_path / "flaky", toml='metric = "total"\n[prepare]\nenv = ["FLAKY"]\n',
                      files={"scripts/prepare.py": 'import os, sys\nif os.environ.get("FLAKY"):\n'
                             '    sys.exit("download failed")\n' + STAMP})
    prepare(root, tmp_path, show=Said())
    monkeypatch.setenv("FLAKY", "1")
    with pytest.raises(TaskError, match="download failed"):
        prepare(root, tmp_path, show=Said(), again=True, pass_env=["FLAKY"])
    assert not prepared_dir(load_task(root), tmp_path / "cache").exists()


# ------------------------------------------------------------------ what prepare.py leaves

def deep_tree(root, depth: int) -> None:
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)


def remove_deep(root) -> None:
    """One level at a time (shutil.rmtree, as pytest's cleanup, recurses)."""
    while (root / "d").exists():
        if (root / "d" / "d").exists():
            os.rename(root / "d" / "d", root / "up")
            os.rmdir(root / "d")
            os.rename(root / "up", root / "d")
        else:
            os.rmdir(root / "d")


def test_a_very_deep_tree_left_by_prepare_is_refused_cleanly(tmp_path):
    """The host walks what prepare.py left (links, kinds, what it produced). Where no quota
    image cuts a copy at 256 folders (not root), a walk that recursed raised RecursionError:
    a traceback instead of a task error."""
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "data.csv").write_text("x\n")
    deep_tree(tmp_path / "env", 1500)
    with pytest.raises(TaskError, match="folders deep"):
        check_folder(tmp_path)
    with pytest.raises(TaskError, match="folders deep"):
        files_of(tmp_path)
    remove_deep(tmp_path / "env")


def test_the_fingerprint_reads_no_link(tmp_path):
    """A task folder is untrusted: its fingerprint (the prepared copy's name) names a link by
    its target and never reads through it (a link to /proc/kmsg would block labcoat)."""
    outside = tmp_path / "outside.txt"
    outside.write_text("one")
    root = write_task(tmp_path / "t", files={"scripts/prepare.py": "pass\n"})
    (root / "env" / "link").symlink_to(outside)
    first = fingerprint(root)
    outside.write_text("two")
    assert fingerprint(root) == first
    (root / "env" / "link").unlink()
    (root / "env" / "link").symlink_to(tmp_path / "elsewhere.txt")
    assert fingerprint(root) != first


DEEP_PREPARE = ('import os\nopen("../env/data.csv", "w").write("x\\n")\n'
                'fd = os.open("../env", os.O_RDONLY)\n'
                'for _ in range(1500):\n'
                '    os.mkdir("d", dir_fd=fd)\n'
                '    fd = os.open("d", os.O_RDONLY, dir_fd=fd)\n')


def test_a_prepare_that_leaves_a_very_deep_tree_fails_and_leaves_nothing(tmp_path):
    root = write_task(tmp_path / "deep", files={"scripts/prepare.py": DEEP_PREPARE})
    with pytest.raises(TaskError, match="folders deep"):
        prepare(root, tmp_path, show=Said())
    assert not list((tmp_path / "cache").glob(".*.tmp"))
    assert not prepared_dir(load_task(root), tmp_path / "cache").exists()
