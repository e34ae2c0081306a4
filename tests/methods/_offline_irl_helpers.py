"""Task check shared by the Methods III test files (offline_irl, sgr_local, sparse_autoencoder,
ln_net): the stand-in for ``labcoat check-task`` while the lead builds it.

It prepares a temp copy of the task folder, runs the ``solve`` scripts on env/ and on
env/ + reference/, and scores both with the task's own eval.get_score.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "environments" / "tasks"


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def _solve(workspace: Path, scripts: list[str], timeout: float) -> None:
    for script in scripts:
        res = subprocess.run([sys.executable, script], cwd=workspace, env=_env(),
                             capture_output=True, text=True, timeout=timeout)
        assert res.returncode == 0, f"{script} failed in {workspace}:\n{res.stderr[-3000:]}"


def _score(task: Path, workspace: Path) -> float:
    spec = importlib.util.spec_from_file_location(f"eval_{task.name}_{workspace.name}",
                                                  task / "scripts" / "eval.py")
    module = importlib.util.module_from_spec(spec)
    cwd = os.getcwd()
    os.chdir(workspace)
    try:
        spec.loader.exec_module(module)
        return float(module.get_score(str(workspace)))
    finally:
        os.chdir(cwd)


def run_task_check(name: str, tmp_path: Path, timeout: float = 300) -> tuple[float, float, dict]:
    """(baseline score, reference score, task.toml) for a freshly prepared copy of the task."""
    task = tmp_path / name
    shutil.copytree(TASKS / name, task)
    toml = tomllib.loads((task / "task.toml").read_text())
    if (task / "scripts" / "prepare.py").exists():
        res = subprocess.run([sys.executable, "prepare.py"], cwd=task / "scripts", env=_env(),
                             capture_output=True, text=True, timeout=timeout)
        assert res.returncode == 0, res.stderr[-3000:]
    base_ws, ref_ws = tmp_path / "ws_base", tmp_path / "ws_ref"
    shutil.copytree(task / "env", base_ws)
    shutil.copytree(task / "env", ref_ws)
    shutil.copytree(task / "reference", ref_ws, dirs_exist_ok=True)
    scores = []
    for ws in (base_ws, ref_ws):
        _solve(ws, toml.get("solve", []), timeout)
        scores.append(_score(task, ws))
    return scores[0], scores[1], toml


def improvement(score: float, baseline: float, direction: str) -> float:
    gain = (score - baseline) / abs(baseline)
    return gain if direction == "higher" else -gain
