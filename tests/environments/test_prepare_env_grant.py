"""A task folder earns no host variable by asking (issue 37, class 4).

``[prepare] env`` is the folder's request; before, the request alone was the grant, so any
folder from the internet (or one shipped inside an imported log) could name ``OPENAI_API_KEY``
and get it. Now a variable reaches prepare.py only when the person names it too: ``--pass-env
NAME`` on the command line, or ``$LABCOAT_PASS_ENV`` (their standing config), and the run that
withholds one says what the folder asked for and how to allow it, in one line. The canary
prepare.py records what it saw in its own copy; it runs as root on every isolating backend.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from environments.task.prepare import PASS_ENV, allowed_env, prepare_task
from environments.task.spec import load_task
from tests.conftest import write_task
from tests.sandbox.backends import docker_marks

BACKENDS = pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=docker_marks)])
NAMES = ("LABCOAT_CANARY_KEY", "OPENAI_API_KEY", "LABCOAT_CANARY_PLAIN")
ASKS = '[prepare]\nenv = ["LABCOAT_CANARY_KEY", "OPENAI_API_KEY"]\n'
CANARY = ("import json, os\nfrom pathlib import Path\n"
          f"got = {{n: os.environ.get(n) for n in {NAMES!r}}}\n"
          "Path('../env/got.json').write_text(json.dumps(got))\n")
KEY = "canary-0123456789-secret"


@pytest.fixture
def person(monkeypatch):
    """A person with credentials in the environment and no standing allowance."""
    monkeypatch.setenv("LABCOAT_CANARY_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-openai")
    monkeypatch.setenv("LABCOAT_CANARY_PLAIN", "plain-value")
    monkeypatch.setenv(PASS_ENV, "")  # recorded, so what --pass-env adds in-process is undone


def asking_task(root):
    return write_task(root, toml='metric = "total"\n' + ASKS, files={"scripts/prepare.py": CANARY})


def saw(tmp_path, sandbox, lines, **kw) -> dict:
    spec = prepare_task(load_task(asking_task(tmp_path / "asks")), cache=tmp_path / "cache",
                        sandbox=sandbox, stdin=None, show=lines.append, **kw)
    return json.loads((spec.env_dir / "got.json").read_text())


@BACKENDS
def test_a_folder_cannot_grant_itself_a_host_variable(tmp_path, person, sandbox):
    lines: list[str] = []
    got = saw(tmp_path, sandbox, lines)
    assert got == dict.fromkeys(NAMES)  # asked for two, the person named none: none reached it
    [told] = [line for line in lines if "asks for" in line]
    assert told.count("\n") == 1 and told.endswith("\n")  # one line
    assert "LABCOAT_CANARY_KEY, OPENAI_API_KEY" in told and "--pass-env LABCOAT_CANARY_KEY" in told
    assert PASS_ENV in told and KEY not in "".join(lines)


@BACKENDS
def test_a_variable_the_person_names_reaches_prepare(tmp_path, person, sandbox):
    lines: list[str] = []
    got = saw(tmp_path, sandbox, lines, pass_env=("LABCOAT_CANARY_KEY", "LABCOAT_CANARY_PLAIN"))
    # granted = asked for AND named: the plain one was named but not asked for
    assert got == {"LABCOAT_CANARY_KEY": KEY, "OPENAI_API_KEY": None, "LABCOAT_CANARY_PLAIN": None}
    said = "".join(lines)
    assert "environment LABCOAT_CANARY_KEY" in said and "asks for OPENAI_API_KEY" in said
    assert KEY not in said


def test_the_standing_allowance_is_the_persons_environment(tmp_path, person, monkeypatch):
    monkeypatch.setenv(PASS_ENV, "LABCOAT_CANARY_KEY, OPENAI_API_KEY")
    assert allowed_env() == frozenset({"LABCOAT_CANARY_KEY", "OPENAI_API_KEY"})
    lines: list[str] = []
    got = saw(tmp_path, "local", lines)
    assert got["LABCOAT_CANARY_KEY"] == KEY and got["OPENAI_API_KEY"] == "sk-canary-openai"
    assert not [line for line in lines if "asks for" in line]


def test_a_bad_name_in_the_allowance_is_a_clear_error(monkeypatch):
    from environments.task.spec import TaskError

    monkeypatch.setenv(PASS_ENV, "GOOD bad-name")
    with pytest.raises(TaskError, match=f"{PASS_ENV}.*bad-name"):
        allowed_env()


def test_labcoat_prepare_pass_env_from_the_command_line(tmp_path, person, monkeypatch):
    from tui.cli.main import app

    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path / "home"))
    root = asking_task(tmp_path / "asks")
    argv = ["prepare", str(root), "--sandbox", "local", "--json"]
    result = CliRunner().invoke(app, [*argv, "--pass-env", "LABCOAT_CANARY_KEY"])
    assert result.exit_code == 0, result.output
    prepared = json.loads(result.stdout)["path"]
    got = json.loads((tmp_path / prepared / "env" / "got.json").read_text())
    assert got["LABCOAT_CANARY_KEY"] == KEY and got["OPENAI_API_KEY"] is None
    bad = CliRunner().invoke(app, [*argv, "--pass-env", "no-such name"])
    assert bad.exit_code == 2 and "--pass-env" in bad.output and "Traceback" not in bad.output
