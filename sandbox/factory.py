"""Choosing a backend by name: ``local``, ``docker``, ``auto`` or ``none``.

Backends register here by name so a new one (the Docker backend) slots in without any caller
changing: callers ask for a kind and get a :class:`~sandbox.base.Sandbox`. ``none`` (no
isolation at all) is never chosen for anyone: ``auto`` fails with what to do instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from sandbox.base import Isolation, Mount, Sandbox, SandboxError, SandboxLimits

SandboxKind = Literal["auto", "local", "docker", "none"]
BACKENDS: dict[str, str] = {
    "local": "sandbox.local:LocalSandbox",
    "docker": "sandbox.docker:DockerSandbox",
    "none": "sandbox.local:UnisolatedSandbox",
}


def backend_class(name: str) -> type[Sandbox]:
    if name not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {name!r} (choose from auto, {', '.join(BACKENDS)})")
    module, _, cls = BACKENDS[name].partition(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as err:
        raise ValueError(f"sandbox backend {name!r} is not available: {err}") from err


def resolve_kind(kind: str) -> str:
    """``auto`` means docker when an engine answers (and its image is ready), else local when
    bubblewrap works; with neither, a :class:`SandboxError` that says what to do."""
    if kind != "auto":
        backend_class(kind)
        return kind
    try:
        if backend_class("docker").isolation().available:
            return "docker"
    except ValueError:
        pass
    from sandbox.local import NO_ISOLATION, bwrap_path

    if bwrap_path() is None:
        raise SandboxError(NO_ISOLATION)
    return "local"


def open_sandbox(
    kind: str,
    workspace: str | Path,
    limits: SandboxLimits | None = None,
    mounts: Sequence[Mount] = (),
) -> Sandbox:
    """A ready sandbox of ``kind`` over ``workspace``; close it (or use ``with``) when done."""
    return backend_class(resolve_kind(kind))(workspace, limits, mounts)


def check_all() -> list[Isolation]:
    """What every known backend isolates on this machine, for ``labcoat sandbox check``."""
    reports = []
    for name in BACKENDS:
        try:
            reports.append(backend_class(name).isolation())
        except ValueError as err:
            reports.append(Isolation(backend=name, available=False, detail=str(err)))
    return reports
