"""Task-folder check shared by the test files of sparse_pgd, mtgcn, poglm and bfn_solver.

Stands in for ``labcoat check-task`` (not available when these tasks were written): prepare the
task in a temporary copy, run the ``solve`` scripts on env/ and on env/ + reference/, and score
both with the task's eval.get_score, with the workspace as the current directory.
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


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score_baseline_and_reference(task_dir: Path, tmp_path: Path) -> tuple[dict, dict[str, float]]:
    """(task.toml as a dict, {"baseline": score, "reference": score})."""
    toml = tomllib.loads((task_dir / "task.toml").read_text())
    task = tmp_path / "task"
    shutil.copytree(task_dir, task)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if (task / "scripts" / "prepare.py").exists():
        subprocess.run([sys.executable, "prepare.py"], cwd=task / "scripts", env=env, check=True,
                       timeout=300, capture_output=True)
    ev = load_module(task / "scripts" / "eval.py", f"eval_{task_dir.name.replace('-', '_')}")
    scores = {}
    for name, overlay in (("baseline", None), ("reference", task / "reference")):
        ws = tmp_path / name
        shutil.copytree(task / "env", ws)
        if overlay is not None:
            shutil.copytree(overlay, ws, dirs_exist_ok=True)
        for script in toml["solve"]:
            proc = subprocess.run([sys.executable, script], cwd=ws, env=env, timeout=900,
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr[-2000:]
        cwd = os.getcwd()
        os.chdir(ws)
        try:
            scores[name] = float(ev.get_score(str(ws)))
        finally:
            os.chdir(cwd)
    return toml, scores


def improvement(toml: dict, score: float) -> float:
    """Relative improvement over the task's recorded baseline, in the metric's direction."""
    gain = (score - toml["baseline"]) / abs(toml["baseline"])
    return gain if toml.get("direction", "higher") == "higher" else -gain
