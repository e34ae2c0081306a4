"""The one ``__init__`` style of method packages: names re-exported lazily (PEP 562).

A package's ``__init__`` lists what it offers researchers (``from methods.d3s import distill``)
without importing numpy/torch at package import: the tool process imports
``methods.<slug>.tools`` (and so the package) just to print ``--schema`` or report a bad
argument, which should not pay for torch. Each name loads its submodule on first use.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]
                 ) -> tuple[Callable[[str], Any], list[str]]:
    """``(__getattr__, __all__)`` for ``package`` from ``{submodule: [names it defines]}``.

    Usage in ``methods/<slug>/__init__.py``::

        __getattr__, __all__ = lazy_exports(__name__, {"data": ["load_split"], ...})
    """
    where = {name: f"{package}.{module}" for module, names in exports.items() for name in names}
    if len(where) != sum(len(names) for names in exports.values()):
        raise ValueError(f"{package}: a name is exported from two submodules")
    shadowed = sorted(set(where) & _submodules(package))
    if shadowed:
        # Importing submodule ``x`` sets the package attribute ``x`` to the module, and then
        # ``__getattr__`` is never asked: ``from pkg import x`` would give the module or the
        # function depending on import order. Such a name is imported from its submodule.
        raise ValueError(f"{package}: {shadowed} would be shadowed by the submodule(s) of that name")

    def __getattr__(name: str) -> Any:
        if name in where:
            return getattr(importlib.import_module(where[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__, sorted(where)


def _submodules(package: str) -> set[str]:
    """Names of the modules and subpackages inside ``package`` (empty if it is not a package)."""
    found: set[str] = set()
    for folder in getattr(sys.modules.get(package), "__path__", []):
        for entry in Path(folder).iterdir():
            if entry.suffix == ".py":
                found.add(entry.stem)
            elif (entry / "__init__.py").exists():
                found.add(entry.name)
    return found
