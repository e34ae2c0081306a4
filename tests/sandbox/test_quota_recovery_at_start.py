"""A run killed with SIGKILL leaves no mount in the person's run folder past the next labcoat
command: every start recovers the quota images whose owner is gone (content copied back,
unmounted), whatever the command, and ``labcoat sandbox check`` says so."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.sandbox.test_quota import kill_owner, mounted_at, need_quota
from tui.cli import app

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="workspace quotas need root")

OWNER = textwrap.dedent("""
    import sys, time
    from sandbox import SandboxLimits
    from sandbox.local import LocalSandbox
    sb = LocalSandbox(sys.argv[1], SandboxLimits(timeout=30, disk_mb=16), use_bwrap=True)
    assert sb.exec(["sh", "-c", "rm old.txt && mkdir sub && echo made > sub/made.txt"]).ok
    print("READY", flush=True)
    time.sleep(600)
""")


def killed_owner(ws: Path) -> None:
    """A process that opened a quota'd sandbox over ``ws``, wrote in it, and was killed -9."""
    kill_owner(OWNER, ws)


def test_any_labcoat_command_recovers_a_killed_runs_mount(tmp_path, monkeypatch):
    from sandbox import quota

    need_quota()
    monkeypatch.setattr(quota, "recovered_at_start", [])
    ws = tmp_path / "runs" / "r1" / "workspace"
    ws.mkdir(parents=True)
    (ws / "old.txt").write_text("deleted by the run\n")
    killed_owner(ws)
    result = CliRunner().invoke(app, ["tools", "--json"])
    assert result.exit_code == 0, result.output
    assert not mounted_at(ws)
    assert f"recovered {ws}" in "".join(result.output.split("\n"))
    assert sorted(p.name for p in ws.iterdir()) == ["sub"]
    assert (ws / "sub" / "made.txt").read_text() == "made\n"
    shutil.rmtree(tmp_path / "runs")  # the person's rm -rf runs/X: nothing busy
    check = CliRunner().invoke(app, ["sandbox", "check", "--no-probe", "--json"])
    line = json.loads(check.output)["quota_recovery"]
    assert "every labcoat start" in line and "this start recovered 1" in line
    assert quota.recovered_at_start == [str(ws)]


def test_a_start_with_nothing_left_mounted_only_reads_the_mount_table(monkeypatch):
    from sandbox import quota

    called = []
    monkeypatch.setattr(quota, "recover_stale", lambda say=True: called.append(1) or [])
    monkeypatch.setattr(quota, "stale_mounts", lambda: [])
    monkeypatch.setattr(quota, "recovered_at_start", [])
    assert quota.recover_at_start() == [] and not called
    assert "none found at this start" in quota.recovery_line()
