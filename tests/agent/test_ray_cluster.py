"""A batch on a real two-node Ray cluster survives losing a node: resume completes it.

Both nodes run on this machine (``ray start --head``, then ``ray start --address``), each with
one CPU, so a two-worker batch runs one combination on each. Once both are running, the second
node is killed (its raylet and every process under it, SIGKILL: a machine lost, not a polite
shutdown); the batch ends with the lost combination still pending, and ``--resume`` on the
surviving node finishes it from the run directory the dead node left on the shared disk.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.agent.helpers import children
from tests.agent.test_batch import actions_file

pytest.importorskip("ray")
pytestmark = [pytest.mark.slow, pytest.mark.serial]  # two Ray nodes and a batch on 2 cores

ROOT = Path(__file__).parents[2]


def _ray_pids() -> set[int]:
    """Processes of Ray's own binaries and workers on this machine (read from /proc)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"ray" in cmd and (b"raylet" in cmd or b"gcs_server" in cmd or b"default_worker" in cmd
                              or b"ray/_private" in cmd or b"ray/autoscaler" in cmd
                              or b"ray/dashboard" in cmd or b"ray::" in cmd):
            pids.add(int(entry))
    return pids


def _kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster():
    """(address, env, node-2 raylet pids): a head and a second node, torn down by PID."""
    tmp = Path(tempfile.mkdtemp(prefix="lcray", dir="/tmp"))  # short: Ray's socket paths
    (tmp / "token").write_text(os.urandom(16).hex() + "\n")
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(tmp / "token"),
           "RAY_USAGE_STATS_ENABLED": "0"}
    port = _free_port()
    address = f"127.0.0.1:{port}"
    before = _ray_pids()
    subprocess.run(["ray", "start", "--head", "--port", str(port), "--num-cpus", "1",
                    "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", str(tmp / "r")],
                   env=env, check=True, capture_output=True, timeout=120)
    head = _ray_pids() - before
    subprocess.run(["ray", "start", "--address", address, "--num-cpus", "1",
                    "--disable-usage-stats"], env=env, check=True, capture_output=True, timeout=120)
    node2 = {pid for pid in _ray_pids() - before - head
             if b"raylet" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]}
    assert node2, "the second node's raylet was not found"
    try:
        yield address, env, node2
    finally:
        ours = _ray_pids() - before
        for pid in set(ours):
            ours |= children(pid)
        _kill(ours)


def _run_states(batch: Path) -> dict[str, str]:
    states = {}
    for meta in batch.glob("runs/*/*/run.json"):
        try:
            states[meta.parent.parent.name] = json.loads(meta.read_text())["status"]
        except (OSError, ValueError, KeyError):
            pass
    return states


def test_a_batch_survives_losing_a_ray_node(cluster, tiny_task, tmp_path):
    address, env, node2 = cluster
    actions = actions_file(tmp_path / "slow.jsonl", 60, sleep=8.0)
    batch = tmp_path / "batch"
    cmd = [sys.executable, "-m", "tui.cli", "batch", "--tasks", str(tiny_task), "--models",
           f"replay/{actions}", "--seeds", "4", "--jobs", "2", "--sandbox", "local", "--batch-dir", str(batch),
           "--executor", "ray", "--ray-address", address, "--json"]
    env = {**env, "LABCOAT_HOME": str(tmp_path / "home")}
    first = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + 240
    while sum(s == "running" for s in _run_states(batch).values()) < 2:  # one on each node
        assert first.poll() is None, [r.get('error') for r in json.loads(first.communicate()[0])['results']]
        assert time.monotonic() < deadline, "two combinations never ran at once"
        time.sleep(0.2)
    victims = set(node2)
    for pid in node2:
        victims |= children(pid)
    _kill(victims)
    out, err = first.communicate(timeout=300)
    assert out.lstrip().startswith('{'), out[:1500]
    result = json.loads(out)
    assert result["lost"] >= 1, (result, err[-2000:])
    assert result["done"] + result["lost"] == 4 and result["failed"] == 0, result
    manifest = json.loads((batch / "batch.json").read_text())
    assert sum(c["state"] == "pending" for c in manifest["combos"].values()) == result["lost"]

    again = subprocess.run([sys.executable, "-m", "tui.cli", "batch", "--resume", str(batch),
                            "--executor", "ray", "--ray-address", address, "--json"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads(again.stdout)
    assert (resumed["done"], resumed["failed"], resumed["lost"]) == (4, 0, 0), resumed
    assert resumed["ran"] == result["lost"]
    for meta in batch.glob("runs/*/*/run.json"):  # each combination ended and scored
        score = json.loads((meta.parent / "score.json").read_text())
        assert score.get("failure") is None and score["success"] is True, score
    assert set(_run_states(batch).values()) == {"finished"} and len(_run_states(batch)) == 4
