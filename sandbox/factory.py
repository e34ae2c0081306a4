"""Choosing a backend by name: ``local``, ``docker``, ``auto`` or ``none``.

Backends register here by name so a new one (the Docker backend) slots in without any caller
changing: callers ask for a kind and get a :class:`~sandbox.base.Sandbox`. ``none`` (no
isolation at all) is never chosen for anyone: ``auto`` fails with what to do instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
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


AUTO_ORDER = ("docker", "local")
"""The backends ``auto`` picks from, first preferred."""


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


def why_unavailable(kind: str) -> str | None:
    """Why backend ``kind`` cannot run commands here now (None: it can), asked of the backend."""
    try:
        report = backend_class(kind).isolation()
    except (ValueError, SandboxError) as err:
        return str(err)
    return None if report.available else (report.detail or f"{kind} is not available")


def continue_on(recorded: str, asked: str | None, *, lost: bool = False,
                why_not: Callable[[str], str | None] | None = None) -> tuple[str, str] | None:
    """The backend a stopped run goes on with, when it is not ``recorded`` (the one it ran on):
    ``(backend, why)``, else None to keep ``recorded``.

    ``asked`` None keeps the run's own backend, checked only for a run whose sandbox was
    ``lost`` (a :class:`SandboxError` saying to pass ``auto``, not a failed open later).
    ``"auto"`` keeps it while it is available, else takes the first of :data:`AUTO_ORDER`
    available now: a batch of ``--sandbox auto`` whose Docker engine went away goes on under
    bubblewrap. A backend by name is taken as asked. ``why_not``: :func:`why_unavailable`."""
    why_not = why_not or why_unavailable
    if asked is None and lost and (why := why_not(recorded)) is not None:
        raise SandboxError(f"the run's sandbox {recorded} is not available now "
                           f"({_first_line(why)}); continue it with --sandbox auto, or name "
                           "another backend")
    if asked is None or asked == recorded:
        return None
    if asked == "auto":
        why = why_not(recorded)
        if why is None:
            return None
        why = _first_line(why)
        new = next((kind for kind in AUTO_ORDER if kind != recorded and why_not(kind) is None), None)
        if new is None:
            raise SandboxError(f"the run's sandbox {recorded} is not available ({why}), nor is "
                               "any other; see `labcoat sandbox check`")
        return new, f"{recorded} is not available now ({why})"
    new = resolve_kind(asked)
    return new, f"asked for {new}"


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["not available"])[0][:200]


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
