"""Where labcoat keeps what outlives a run: prepared tasks, stored baselines, Python envs.

One function in a module of its own, because every room below the CLI needs it (preparing,
baselines, the sandbox's Python environments) and none of them may import another for it.
"""

from __future__ import annotations

import os
from pathlib import Path


def labcoat_home() -> Path:
    """``$LABCOAT_HOME``, else ``~/.cache/labcoat``."""
    return Path(os.environ.get("LABCOAT_HOME", Path.home() / ".cache" / "labcoat"))
