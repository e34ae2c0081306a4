"""A task's own Python requirements (``[python]``), ``--python`` and ``--device``.

Offline throughout: the packages are wheels this file writes (a wheel is a zip with three
metadata files), installed with ``LABCOAT_OFFLINE=1`` from ``$LABCOAT_HOME/wheels``.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.scoring.evaluate import evaluate
from environments.task.sandboxing import code_mounts, sandbox_limits
from environments.task.spec import TaskError, load_task
from sandbox import SandboxError, open_sandbox, pyenv
from sandbox.base import PythonEnv, SandboxLimits
from tests.conftest import write_task
from tests.sandbox.backends import docker_marks

PROBE = "labcoat_probe_pkg"
PROBE_EVAL = (f"import {PROBE}\n"
              f"def get_score(submission_folder):\n    return float({PROBE}.VERSION)\n")
SHOW = (f"import sys, cycler, {PROBE}\n"
        f"print({PROBE}.VERSION, cycler.__version__, sys.prefix)\n")


def make_wheel(folder: Path, name: str, version: str, source: str) -> Path:
    """A pure-Python wheel of one module ``name`` (``source`` its ``__init__.py``)."""
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": source,
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: labcoat-tests\n"
                              "Root-Is-Purelib: true\nTag: py3-none-any\n"}

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    files[f"{dist}/RECORD"] = "".join(f"{p},sha256={digest(t)},{len(t.encode())}\n"
                                      for p, t in files.items()) + f"{dist}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for p, t in files.items():
            z.writestr(p, t)
    return path


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A LABCOAT_HOME of this test's own, offline, with the probe wheels in its wheel cache:
    ``labcoat_probe_pkg`` (in no environment) and ``cycler`` 0.0.1 (the host has 0.12)."""
    home = tmp_path / "home"
    monkeypatch.setenv("LABCOAT_HOME", str(home))
    monkeypatch.setenv(pyenv.OFFLINE_ENV, "1")
    monkeypatch.delenv(pyenv.FIND_LINKS_ENV, raising=False)
    make_wheel(home / "wheels", PROBE, "1.0", "VERSION = '1.0'\n")
    make_wheel(home / "wheels", "cycler", "0.0.1", "__version__ = '0.0.1'\n")
    return home


def task_with(tmp_path: Path, python_table: str, files: dict[str, str] | None = None,
              eval_body: str | None = None) -> Path:
    toml = f'metric = "total"\nbaseline = 6.0\nsolve = ["train.py"]\n{python_table}'
    return write_task(tmp_path / "task", toml=toml, files=files, eval_body=eval_body)


PINNED = f'[python]\nrequirements = ["{PROBE}==1.0", "cycler==0.0.1"]\n'


# ---------------------------------------------------------------- what a task may declare


def test_requirements_load_from_the_table_and_the_file(tmp_path):
    root = task_with(tmp_path, '[python]\nrequirements = ["numpy<2"]\n'
                     'requirements_file = "scripts/requirements.txt"\n',
                     files={"scripts/requirements.txt": "# pins\nscikit-learn==1.2.2  # squared\n\n"
                            'ogb; python_version >= "3.8"\n'})
    assert load_task(root).python_requirements == [
        "numpy<2", "scikit-learn==1.2.2", 'ogb; python_version >= "3.8"']


def test_a_folder_without_task_toml_uses_scripts_requirements_txt(tmp_path):
    root = write_task(tmp_path / "clrs", files={"scripts/requirements.txt": "absl-py>=0.13.0\n"})
    (root / "task.toml").unlink()
    assert load_task(root).python_requirements == ["absl-py>=0.13.0"]
    assert load_task(write_task(tmp_path / "plain")).python_requirements == []


MALICIOUS = ["--index-url http://evil.example/simple", "-e /", "-r /etc/passwd",
             "git+https://evil.example/pkg.git", "file:///tmp/pkg", "./pkg", "/tmp/pkg",
             "pkg @ https://evil.example/pkg-1.0-py3-none-any.whl", "--extra-index-url=http://x",
             "numpy --index-url http://evil.example"]


@pytest.mark.parametrize("line", MALICIOUS)
def test_an_option_url_or_path_is_refused_at_load(tmp_path, line):
    """Each would let a task folder point pip at a server or a folder of its choosing."""
    inline = task_with(tmp_path / "a", f'[python]\nrequirements = ["numpy<2", {line!r}]\n'
                       .replace("'", '"'))
    with pytest.raises(TaskError, match="python.requirements"):
        load_task(inline)
    in_file = write_task(tmp_path / "b" / "task", files={"scripts/requirements.txt": f"numpy<2\n{line}\n"})
    (in_file / "task.toml").unlink()
    with pytest.raises(TaskError, match="requirements.txt:2"):
        load_task(in_file)


def test_a_requirements_file_outside_the_folder_is_refused_unread(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2 is the password\n")
    for i, rel in enumerate(("../secret.txt", "/etc/hostname")):
        with pytest.raises(TaskError, match="inside the task folder"):
            load_task(task_with(tmp_path / str(i), f'[python]\nrequirements_file = "{rel}"\n'))
    linked = task_with(tmp_path / "linked", '[python]\nrequirements_file = "scripts/req.txt"\n')
    (linked / "scripts" / "req.txt").symlink_to(secret)
    with pytest.raises(TaskError) as err:
        load_task(linked)
    assert "hunter2" not in str(err.value)  # refused at load's walk, before any read
    assert "a link out of the task folder" in str(err.value)


def test_requirement_line_normalises_and_keeps_markers():
    assert pyenv.requirement_line("  NumPy <2 ") == "NumPy<2"
    assert pyenv.requirement_line('a[x]>=1; sys_platform == "linux"') == 'a[x]>=1; sys_platform == "linux"'
    assert pyenv.env_key(PythonEnv(requirements=("a", "b")), "local", "py") == \
        pyenv.env_key(PythonEnv(requirements=("b", "a")), "local", "py")
    assert pyenv.env_key(PythonEnv(requirements=("a",)), "local", "py") != \
        pyenv.env_key(PythonEnv(requirements=("a",)), "docker", "py")


# ---------------------------------------------------------------- built once, in the sandbox


def test_built_once_in_the_sandbox_and_used_by_commands_and_eval(tmp_path, home, monkeypatch):
    """Two sandboxes opening at once build the environment once; commands import the pinned
    packages (the pin wins over the host's cycler 0.12) while labcoat's process does not have
    them; eval.py runs with them; a later open finds it built (its marker untouched)."""
    assert importlib.util.find_spec(PROBE) is None
    builds = []
    real_build = pyenv._build

    def counted(*args, **kwargs):
        builds.append(1)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(pyenv, "_build", counted)
    task = load_task(task_with(tmp_path, PINNED, eval_body=PROBE_EVAL))
    limits = sandbox_limits(task)
    assert limits.python_env.requirements == (f"{PROBE}==1.0", "cycler==0.0.1")
    outputs: dict[int, str] = {}

    def use(i: int) -> None:
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        with open_sandbox("local", ws, limits, code_mounts()) as sb:
            outputs[i] = sb.exec([sb.python, "-c", SHOW]).stdout

    threads = [threading.Thread(target=use, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [1]
    assert outputs == {0: f"1.0 0.0.1 {pyenv.ENV_TARGET}\n", 1: f"1.0 0.0.1 {pyenv.ENV_TARGET}\n"}
    [built] = pyenv.list_envs(home / "pyenvs")
    assert built.requirements == [f"{PROBE}==1.0", "cycler==0.0.1"] and built.backend == "local"
    assert "offline" in built.sources
    assert not list((home / "pyenvs").glob(".build-*"))
    marker = home / "pyenvs" / built.key / pyenv.ENV_FILE
    stamp = marker.stat().st_mtime_ns
    result = evaluate(task, task.env_dir, sandbox="local")
    assert result.value == 1.0, result
    assert builds == [1] and marker.stat().st_mtime_ns == stamp
    # torch and numpy of labcoat's own install stay importable beneath the pins
    with open_sandbox("local", tmp_path / "ws0", limits, code_mounts()) as sb:
        r = sb.exec([sb.python, "-c", "import numpy; print(numpy.__name__)"])
    assert r.stdout == "numpy\n", r.stderr


def test_a_requirement_nowhere_to_be_found_is_refused_by_name_and_source(tmp_path, home):
    task = load_task(task_with(tmp_path, '[python]\nrequirements = ["labcoat-no-such-pkg==9"]\n'))
    (tmp_path / "ws").mkdir()
    with pytest.raises(pyenv.PyEnvError) as err:
        open_sandbox("local", tmp_path / "ws", sandbox_limits(task), code_mounts())
    message = str(err.value)
    assert "'labcoat-no-such-pkg==9'" in message and "cannot be satisfied" in message
    assert str(home / "wheels") in message and "LABCOAT_OFFLINE=1" in message
    assert isinstance(err.value, SandboxError)
    assert not [p for p in (home / "pyenvs").iterdir() if not p.name.endswith(".lock")]


def test_a_run_whose_requirements_cannot_be_built_ends_cleanly_saying_which(tmp_path, home):
    """``labcoat run`` on such a task: no traceback; the run ends ``error`` with the reason."""
    import json

    from tui.cli import app

    folder = task_with(tmp_path, '[python]\nrequirements = ["labcoat-no-such-pkg==9"]\n')
    result = CliRunner().invoke(app, ["run", str(folder), "--agent", "baseline", "--sandbox", "local",
                                      "--runs-dir", str(tmp_path / "runs"), "--no-score", "--json"])
    assert "Traceback" not in result.output, result.output
    [meta] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/run.json")]
    assert meta["status"] == "error"
    assert "the sandbox could not be opened" in meta["status_reason"]
    assert "'labcoat-no-such-pkg==9'" in meta["status_reason"]

def test_the_build_sandbox_has_the_network_only_online(tmp_path, home, monkeypatch):
    """Offline, pip's sandbox has no network; online it has (to reach the index), and only it."""
    seen: list[SandboxLimits] = []

    def refuse(workspace, limits, mounts):
        seen.append(limits)
        raise SandboxError("stop here")

    for offline in (True, False):
        env = PythonEnv(requirements=(f"{PROBE}==1.0",), find_links=(home / "wheels",),
                        offline=offline, cache=home / "pyenvs")
        with pytest.raises(SandboxError, match="stop here"):
            pyenv.ensure(env, backend="local", python=sys.executable, identity="x",
                         open_builder=refuse)
    assert [lim.network for lim in seen] == [False, True]
    assert all(not lim.python_env.requirements for lim in seen)  # no build within a build


# ---------------------------------------------------------------- --python and --device


def test_python_picks_a_host_interpreter_mounted_read_only(tmp_path):
    base = os.path.realpath(sys._base_executable)  # labcoat's venv is made from it
    ws = tmp_path / "ws"
    ws.mkdir()
    with open_sandbox("local", ws, SandboxLimits(python_env=PythonEnv(python=base))) as sb:
        r = sb.exec([sb.python, "-c", "import sys; print(sys.executable, sys.prefix)"])
        write = sb.exec([sb.python, "-c", f"open({base!r} + '.x', 'w')"])
    assert r.stdout.split() == [base, sys.base_prefix], r.stderr
    assert write.exit_code != 0 and not os.path.exists(base + ".x")
    for bad, why in (("python3", "absolute path"), (str(tmp_path / "nope"), "no executable")):
        with pytest.raises(pyenv.PyEnvError, match=why):
            open_sandbox("local", ws, SandboxLimits(python_env=PythonEnv(python=bad)))


def test_device_cpu_hides_the_gpus_and_cuda_is_refused_without_one(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with open_sandbox("local", ws, SandboxLimits(python_env=PythonEnv(device="cpu"))) as sb:
        r = sb.exec([sb.python, "-c", "import os; print(repr(os.environ['CUDA_VISIBLE_DEVICES']))"])
    assert r.stdout == "''\n"
    assert pyenv.device_env("cuda:1") == {"CUDA_VISIBLE_DEVICES": "1"}
    assert pyenv.device_env("cuda:1", docker=True) == {"CUDA_VISIBLE_DEVICES": "0"}
    if pyenv.gpu_indices():
        pytest.skip("this machine has a GPU: the refusal cannot be seen")
    with pytest.raises(pyenv.PyEnvError, match="no NVIDIA GPU on this machine"):
        open_sandbox("local", ws, SandboxLimits(python_env=PythonEnv(device="cuda")))


def test_cli_refuses_a_missing_gpu_and_a_bad_device_in_one_line(tmp_path, monkeypatch):
    from tui.cli import app

    monkeypatch.delenv("LABCOAT_DEVICE", raising=False)
    bad = CliRunner().invoke(app, ["run", str(tmp_path), "--device", "gpu"])
    assert bad.exit_code == 2 and "give cpu, cuda or cuda:N" in bad.output
    rel = CliRunner().invoke(app, ["baseline", str(tmp_path), "--python", "bin/python3"])
    assert rel.exit_code == 2 and "absolute path" in rel.output
    if pyenv.gpu_indices():
        return
    for command in (["run", str(tmp_path)], ["score", str(tmp_path)], ["baseline", str(tmp_path)]):
        result = CliRunner().invoke(app, [*command, "--device", "cuda:0"])
        assert result.exit_code == 2, result.output
        assert "no NVIDIA GPU on this machine" in result.output and "Traceback" not in result.output


# ---------------------------------------------------------------- docker: a derived image


@pytest.mark.parametrize("_", [pytest.param(None, id="docker", marks=docker_marks)])
def test_docker_bakes_the_environment_into_a_derived_image(tmp_path, home, _):
    from sandbox.image import engine_client

    task = load_task(task_with(tmp_path, PINNED))
    ws = tmp_path / "ws"
    ws.mkdir()
    try:
        with open_sandbox("docker", ws, sandbox_limits(task), code_mounts()) as sb:
            assert sb.image.startswith(f"{pyenv.IMAGE_REPO}:")
            r = sb.exec([sb.python, "-c", SHOW])
        assert r.stdout == f"1.0 0.0.1 {pyenv.ENV_TARGET}\n", r.stderr
        [built] = pyenv.list_envs(home / "pyenvs")
        assert built.image == sb.image and not (home / "pyenvs" / built.key / "venv").exists()
        with open_sandbox("docker", ws, sandbox_limits(task), code_mounts()) as again:
            assert again.image == built.image
        assert pyenv.list_envs(home / "pyenvs") == [built]  # not built again
        with pytest.raises(SandboxError, match="not an interpreter inside the image"):
            open_sandbox("docker", ws, SandboxLimits(python_env=PythonEnv(python="/no/python")))
    finally:
        for env in pyenv.list_envs(home / "pyenvs"):
            engine_client().images.remove(env.image, force=True)


def test_sandbox_envs_lists_and_removes_cached_environments(tmp_path, home):
    from tui.cli import app

    cache = home / "pyenvs"
    for key, reqs in (("aaaa000011112222", ["numpy<2"]), ("bbbb000011112222", ["ogb==1.3.6"])):
        (cache / key / "venv").mkdir(parents=True)
        (cache / key / pyenv.ENV_FILE).write_text(pyenv.BuiltEnv(
            key=key, backend="local", python="/x/python", identity="x", requirements=reqs,
            sources="s", built_at=0).model_dump_json())
    listed = CliRunner().invoke(app, ["sandbox", "envs", "--json"])
    assert [e["requirements"] for e in json.loads(listed.stdout)] == [["numpy<2"], ["ogb==1.3.6"]]
    assert "numpy<2" in CliRunner().invoke(app, ["sandbox", "envs", "--wide"]).stdout
    gone = CliRunner().invoke(app, ["sandbox", "envs", "--remove", "cccc000011112222"])
    assert gone.exit_code == 2 and "no cached environment cccc000011112222" in gone.output
    removed = CliRunner().invoke(app, ["sandbox", "envs", "--remove", "aaaa000011112222"])
    assert removed.exit_code == 0 and "removed aaaa000011112222" in removed.stdout
    assert [e.key for e in pyenv.list_envs(cache)] == ["bbbb000011112222"]
    assert not (cache / "aaaa000011112222").exists()
