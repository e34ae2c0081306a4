"""A whole replayed episode through ``labcoat run``, on docker and on local, scored the same.

``vectorization`` replays a scripted research-agent episode (examples/vectorization.replies.txt:
it reads, edits and times train.py); ``digits`` replays examples/digits_replay.jsonl (it trains
the MLP in the sandbox and writes submission.csv). Each runs once with ``--sandbox local`` and
once with ``--sandbox docker``; the two runs must take the same steps with the same outcomes,
end with the same workspace, and score the same: the same accuracy on digits, and on
vectorization (a timing metric) the same verdict with both timings measured.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.backends import docker_unavailable, require_docker_image

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.serial,  # vectorization's verdict is a timing
    pytest.mark.skipif(docker_unavailable() is not None,
                       reason=docker_unavailable() or "a Docker engine answers"),
]

EPISODES = {
    "vectorization": ["--model", f"scripted/{EXAMPLES / 'vectorization.replies.txt'}"],
    "digits": ["--actions", str(EXAMPLES / "digits_replay.jsonl")],
}


def labcoat_run(task: str, sandbox: str, runs_dir: Path) -> dict:
    argv = [sys.executable, "-m", "tui.cli", "run", task, *EPISODES[task], "--sandbox", sandbox,
            "--runs-dir", str(runs_dir), "--json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name in list(env):  # the replay needs no provider; make sure none is reachable
        if name.endswith("_API_KEY"):
            del env[name]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=1200,
                          check=False)
    assert proc.returncode == 0, (f"labcoat run ({sandbox}) failed:\n{proc.stdout[-3000:]}\n"
                                  f"{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def steps(run_dir: Path) -> list[tuple]:
    out = []
    for line in (run_dir / "trace.jsonl").read_text().splitlines():
        s = json.loads(line)
        out.append((s["action"], s.get("exit_code"), s.get("error")))
    return out


def workspace_digest(ws: Path) -> dict[str, str]:
    return {str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(ws.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.parametrize("task", sorted(EPISODES))
def test_replayed_episode_scores_the_same_on_docker_and_local(task, tmp_path):
    missing = [a for a in EPISODES[task] if a.startswith(str(EXAMPLES)) and not Path(a).exists()]
    missing += [a.split("/", 1)[1] for a in EPISODES[task]
                if a.startswith("scripted/") and not Path(a.split("/", 1)[1]).exists()]
    if missing:
        pytest.fail(f"episode file missing: {missing}")
    require_docker_image()
    local = labcoat_run(task, "local", tmp_path / "runs-local")
    docker = labcoat_run(task, "docker", tmp_path / "runs-docker")
    assert local["sandbox"] == "local" and docker["sandbox"] == "docker"
    assert local["status"] == docker["status"] == "finished"

    # The same episode: the same steps with the same outcomes, the same final workspace.
    local_dir, docker_dir = Path(local["run_dir"]), Path(docker["run_dir"])
    assert steps(docker_dir) == steps(local_dir)
    assert workspace_digest(docker_dir / "workspace") == workspace_digest(local_dir / "workspace")
    # The sandbox's user wrote there; the host user can still read everything it left.
    for p in (docker_dir / "workspace").rglob("*"):
        if p.is_file():
            p.read_bytes()

    ls, ds = local["score"], docker["score"]
    assert ls["failure"] is None and ds["failure"] is None, (ls["detail"], ds["detail"])
    assert ls["metric"] == ds["metric"]
    assert ls["success"] == ds["success"]
    if task == "digits":
        assert ds["value"] == ls["value"]  # seeded CPU training: bit for bit
        assert ds["baseline"] == ls["baseline"]
    else:
        # forward_seconds is a wall-clock time, and so is the baseline a timed task measures
        # beside it: all measured, same verdict.
        for x in (ls["value"], ds["value"], ls["baseline"], ds["baseline"]):
            assert math.isfinite(x) and x > 0
