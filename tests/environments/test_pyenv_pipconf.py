"""Task environments build with the person's pip configuration (issue 41).

The configuration is a ``pip.conf`` of the test's own (``PIP_CONFIG_FILE``) naming a
``file://`` index this file writes (a PEP 503 folder: ``simple/<project>/index.html`` linking to
``../../files/<wheel>``); no ``LABCOAT_FIND_LINKS``, no ``$LABCOAT_HOME/wheels``, online (the
build may use the network; the index needs none).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.task.sandboxing import code_mounts, sandbox_limits
from environments.task.spec import load_task
from sandbox import open_sandbox, pyenv
from tests.environments.test_pyenv import make_wheel, task_with
from tests.sandbox.backends import docker_marks

PROBE = "labcoat_pipconf_probe"
PROJECT = "labcoat-pipconf-probe"
PIP_VARS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX",
            "PIP_TRUSTED_HOST", "PIP_CERT")


def file_index(root: Path) -> Path:
    """A ``file://`` package index holding ``labcoat-pipconf-probe`` 1.0; returns its ``simple``."""
    wheel = make_wheel(root / "files", PROBE, "1.0", "VERSION = '1.0'\n")
    page = root / "simple" / PROJECT / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(f'<html><body><a href="../../files/{wheel.name}">{wheel.name}</a></body></html>\n')
    return root / "simple"


@pytest.fixture
def person(tmp_path, monkeypatch) -> Path:
    """This test's LABCOAT_HOME (no wheel folder), online, and a pip.conf the test fills in."""
    monkeypatch.setenv("LABCOAT_HOME", str(tmp_path / "home"))
    for name in (pyenv.OFFLINE_ENV, pyenv.FIND_LINKS_ENV, *PIP_VARS):
        monkeypatch.delenv(name, raising=False)
    conf = tmp_path / "pip.conf"
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    return conf


def build_and_import(tmp_path: Path, backend: str) -> str:
    task = load_task(task_with(tmp_path, f'[python]\nrequirements = ["{PROJECT}==1.0"]\n'))
    ws = tmp_path / "ws"
    ws.mkdir()
    with open_sandbox(backend, ws, sandbox_limits(task), code_mounts()) as sb:
        done = sb.exec([sb.python, "-c", f"import {PROBE}; print({PROBE}.VERSION)"])
    assert done.ok, done.stderr
    return done.stdout.strip()


@pytest.mark.slow  # a venv built by pip in a sandbox: ~8 s
@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=docker_marks)])
def test_a_pinned_environment_builds_from_the_index_of_a_pip_conf(tmp_path, person, backend):
    index = file_index(tmp_path / "mirror")
    person.write_text(f"[global]\nindex-url = file://{index}\n")
    try:
        assert build_and_import(tmp_path, backend) == "1.0"
        [built] = pyenv.list_envs(tmp_path / "home" / "pyenvs")
        assert str(index) in built.sources and "your pip configuration" in built.sources
    finally:
        if backend == "docker":
            from sandbox.image import engine_client

            for env in pyenv.list_envs(tmp_path / "home" / "pyenvs"):
                engine_client().images.remove(env.image, force=True)


@pytest.mark.slow
def test_a_find_links_folder_of_a_pip_conf_is_used(tmp_path, person):
    folder = tmp_path / "wheels-of-mine"
    make_wheel(folder, PROBE, "1.0", "VERSION = '1.0'\n")
    person.write_text(f"[global]\nno-index = true\nfind-links = {folder}\n")
    assert build_and_import(tmp_path, "local") == "1.0"


@pytest.mark.slow
def test_an_unreachable_index_is_named_and_its_credentials_never_shown(tmp_path, person):
    secret = "s3cret-token"
    person.write_text(f"[install]\nindex-url = https://alice:{secret}@127.0.0.1:9/simple\n")
    with pytest.raises(pyenv.PyEnvError) as err:
        build_and_import(tmp_path, "local")
    message = str(err.value)
    assert "could not reach" in message and "127.0.0.1:9" in message, message
    assert secret not in message and "alice:***@127.0.0.1:9" in message
    written = [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    assert all(secret.encode() not in p.read_bytes() for p in written)


def test_what_a_build_takes_of_a_configuration(tmp_path, person):
    from sandbox import pipconf

    index = file_index(tmp_path / "mirror")
    links = tmp_path / "links"
    links.mkdir()
    cert = tmp_path / "ca.pem"
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    person.write_text(f"[global]\nindex-url = https://mirror.example/simple\n"
                      f"extra-index-url = file://{index}\nfind-links = {links}\n"
                      f"cert = {cert}\ntrusted-host = mirror.example\n")
    conf = pipconf.person_pip_config()
    assert conf.index_url == "https://mirror.example/simple" and conf.find_links == (str(links),)
    scratch = tmp_path / "build"
    scratch.mkdir()
    made = pipconf.build_sources(conf, scratch, offline=False)
    assert {(m.source, m.read_only) for m in made.mounts} == {
        (index.parent, True), (links, True), (scratch / "cert", True)}  # the index with ../files
    args = made.args(lambda target: "/in" + target)
    assert args[:2] == ["--index-url", "https://mirror.example/simple"]
    assert f"file:///in{pipconf.SOURCES_TARGET}/0/simple" in args and "--trusted-host" in args
    assert (scratch / "cert" / "cert.pem").read_text() == cert.read_text()
    offline = pipconf.build_sources(conf, scratch, offline=True).args(lambda t: t)
    assert "--index-url" not in offline and "--extra-index-url" not in offline
    assert "--find-links" in offline
