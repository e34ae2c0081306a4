"""A task folder's ``[limits]`` have ceilings the person controls, and ``labcoat run`` says which
caps it cannot enforce (Trust IV, classes 6 and 9).

The attacks: ``disk_mb = 200000`` made a 210 GB quota image on a disk with 71 GB free;
``pids = 10000000`` ended labcoat with a bare ``[Errno 22] Invalid argument``; prepare.py wrote
past the disk cap into the uncapped tmpfs ``/tmp``; as a non-root user the pids cap was not
enforced and only ``labcoat sandbox check`` said so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox import SandboxLimits
from sandbox.base import Isolation
from tests.conftest import write_task
from tests.sandbox.backends import BACKEND_PARAMS, make_sandbox

ISOLATING = [p for p in BACKEND_PARAMS if p.id not in ("local-plain", "local-bundled-bwrap")]
REPO = Path(__file__).parents[2]
TOML = 'metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = ["train.py"]\n'


def _task(tmp_path: Path, limits: str) -> Path:
    return write_task(tmp_path / "greedy", toml=TOML + "\n[limits]\n" + limits)


def _run(task: Path, tmp_path: Path, *extra: str):
    from tui.cli import app

    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"action": "Final Answer", "args": {}}) + "\n")
    return CliRunner().invoke(app, ["run", str(task), "--actions", str(actions), "--sandbox",
                                    "local", "--runs-dir", str(tmp_path / "runs"), *extra])


@pytest.mark.parametrize("limits, said", [
    ("disk_mb = 200000\n", "disk_mb = 200000 is above this machine's ceiling"),
    ("pids = 10000000\n", "pids = 10000000 is above this machine's ceiling"),
    ("memory_mb = 100000000\n", "memory_mb = 100000000 is above this machine's ceiling"),
    ("max_files = 2000000000\n", "max_files = 2000000000's inode table"),
])
def test_a_limit_above_the_machine_is_refused_in_one_line(tmp_path, monkeypatch, limits, said):
    monkeypatch.setenv("LABCOAT_MAX_DISK_MB", "50000")  # whatever this disk has free
    result = _run(_task(tmp_path, limits), tmp_path)
    out = " ".join(result.output.split())
    assert result.exit_code != 0 and said in out, result.output
    assert "Errno" not in out and "Traceback" not in out and "LABCOAT_MAX_" in out
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # no run made


def test_the_person_sets_the_ceiling(tmp_path, monkeypatch):
    from environments.task.sandboxing import sandbox_limits
    from environments.task.spec import load_task
    from sandbox.caps import LimitRefused

    task = load_task(_task(tmp_path, "pids = 4000\n"))
    assert sandbox_limits(task).pids == 4000  # below the machine's: as declared, never lowered
    monkeypatch.setenv("LABCOAT_MAX_PIDS", "1000")
    with pytest.raises(LimitRefused, match=r"pids = 4000 .* of 1000 \(\$LABCOAT_MAX_PIDS\)"):
        sandbox_limits(task)
    monkeypatch.setenv("LABCOAT_MAX_PIDS", "lots")
    with pytest.raises(LimitRefused, match="whole number"):
        sandbox_limits(task)


@pytest.mark.skipif(not Path("/sys/fs/cgroup/pids").is_dir() and not Path(
    "/sys/fs/cgroup/cgroup.controllers").exists(), reason="no cgroup here")
def test_a_cap_the_kernel_refuses_is_said_not_errno():
    from sandbox.cgroups import Cgroup, cgroups_usable

    if not cgroups_usable():
        pytest.skip("cgroups are not writable here")
    with pytest.raises(Exception) as err:
        Cgroup(64 << 20, 1.0, 10_000_000)
    assert "pids.max = 10000000" in str(err.value) and "Errno" not in str(err.value)


WRITE_TMP = textwrap.dedent("""
    import os, sys
    wrote = {}
    for where in ("/tmp", "/dev/shm"):
        n = 0
        try:
            with open(os.path.join(where, "big"), "wb") as f:
                for _ in range(96):
                    f.write(b"x" * (1 << 20))
                    n += 1
                    f.flush()
        except OSError:
            pass
        wrote[where] = n
    print(wrote)
""")


@pytest.mark.parametrize("backend", ISOLATING)
def test_scratch_tmpfs_is_capped_by_the_disk_and_memory_caps(tmp_path, backend):
    """``/tmp`` (and ``/dev/shm``) are files in memory: an unsized tmpfs takes half the host's
    memory, past ``disk_mb``. Each is sized to min(disk_mb, memory_mb)."""
    limits = SandboxLimits(timeout=60, disk_mb=48, file_mb=200, memory_mb=512)
    with make_sandbox(backend, tmp_path, limits) as sb:
        r = sb.exec([sb.python, "-c", WRITE_TMP])
    assert r.ok, r.stderr
    wrote = eval(r.stdout.strip())
    assert wrote["/tmp"] <= 48, wrote
    assert wrote["/dev/shm"] <= 64, wrote  # docker's /dev/shm is its engine's 64 MB


def test_run_says_which_caps_are_not_enforced(tmp_path, monkeypatch):
    """What `labcoat run` prints when its sandbox runs without a writable cgroup (as a
    non-root user): the caps it does not enforce, by name."""
    from sandbox.local import LocalSandbox

    unenforced = Isolation(backend="local", available=True, filesystem=True, network=True,
                           memory=True, cpu=False, pids=False, disk_quota="not enforced: test")
    monkeypatch.setattr(LocalSandbox, "isolation", classmethod(lambda cls: unenforced))
    result = _run(write_task(tmp_path / "tiny"), tmp_path)
    out = " ".join(result.output.split())
    assert "NOT enforced here: pids (process count); cpus" in out, result.output
    assert "disk_mb" in out


def _as_nobody(code: str) -> subprocess.CompletedProcess:
    """``code`` run by this venv's Python as ``nobody`` holding one capability,
    CAP_DAC_READ_SEARCH, so that it can read the checkout and the venv wherever they are (CI's
    venv is in a 0700 temporary folder, a developer's under /root); it grants no write, so the
    cgroups and quotas stay as closed to it as to any other user."""
    return subprocess.run(
        ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
         "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
         "env", "-i", "HOME=/tmp", "PATH=/usr/bin:/bin", f"PYTHONPATH={REPO}",
         sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_as_a_non_root_user_run_says_the_pids_cap_is_not_enforced():
    """Run as a non-root user (``nobody``): the local backend has no writable cgroup, so the
    pids cap is not enforced, and the line ``labcoat run`` prints says so."""
    r = _as_nobody("import os\n"
                   "from tui.cli.run import unenforced_caps\n"
                   "from sandbox.local import LocalSandbox\n"
                   "print(os.geteuid())\n"
                   "print(LocalSandbox.isolation().pids)\n"
                   "print(unenforced_caps('local'))\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-3] == "65534"
    enforced, said = r.stdout.strip().splitlines()[-2:]
    assert enforced == "False"
    assert "NOT enforced here: pids (process count)" in said, said
