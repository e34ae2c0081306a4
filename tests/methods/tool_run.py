"""Running a method's tool the way an actor does: ``python -m methods.<slug> [ENTRY] --args JSON``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tool_process(module: str, *entry: str, args: dict | str, cwd: Path = ROOT, timeout: float = 300,
             bare: bool = False) -> subprocess.CompletedProcess:
    """The tool's process, run in ``cwd`` (a workspace) with the project importable; ``args`` as
    a dict, or as the raw ``--args`` text. ``bare``: none of this process's environment either
    (as in the sandbox), so a tool that leans on it fails here."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"} if bare else {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", module, *entry, "--args", args if isinstance(args, str) else json.dumps(args)]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
