"""The list of method tools, discovered from ``methods/<slug>/tools.py``.

Each method package declares ``TOOLS: list[ToolSpec]`` in a ``tools.py`` that imports only
pydantic and :mod:`methods.toolspec`. The registry loads that file by path, without running the
package's ``__init__`` (which may well import torch for researchers' convenience), so reading
the registry never imports torch (a test checks this). Discovery rather than a hand-kept list
means adding a method touches only its own package.
"""

from __future__ import annotations

import importlib.util
import pkgutil
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from methods.toolspec import ToolSpec

METHODS_DIR = Path(__file__).resolve().parent
CODE_ROOT = METHODS_DIR.parent
"""The folder that holds the ``methods`` package: what a sandbox mounts to run the same code."""


class UnknownToolError(KeyError):
    """A task or an actor named a tool that no method package declares."""


@lru_cache(maxsize=1)
def all_tools() -> dict[str, ToolSpec]:
    """Every declared tool by name, in package order."""
    tools: dict[str, ToolSpec] = {}
    for info in sorted(pkgutil.iter_modules([str(METHODS_DIR)]), key=lambda i: i.name):
        if not info.ispkg or info.name.startswith("_"):
            continue
        if not (METHODS_DIR / info.name / "tools.py").exists():
            continue
        module = _load_tools_file(info.name)
        for spec in getattr(module, "TOOLS", []):
            if spec.name in tools:
                raise ValueError(f"tool {spec.name!r} is declared twice (methods.{info.name})")
            tools[spec.name] = spec
    return tools


def _load_tools_file(package: str) -> ModuleType:
    path = METHODS_DIR / package / "tools.py"
    name = f"_labcoat_tools_{package}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def get_tool(name: str) -> ToolSpec:
    """The tool called ``name``; :class:`UnknownToolError` lists the known ones otherwise."""
    tools = all_tools()
    if name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        raise UnknownToolError(f"unknown method tool {name!r} (known: {known})")
    return tools[name]
