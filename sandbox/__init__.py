"""Where code runs: one :class:`Sandbox` interface, a local and a Docker backend."""

from sandbox.base import (
    CODE_TARGET,
    WORKDIR,
    ExecResult,
    Isolation,
    Mount,
    Sandbox,
    SandboxBusy,
    SandboxError,
    SandboxLimits,
)
from sandbox.factory import check_all, open_sandbox, resolve_kind

__all__ = [
    "CODE_TARGET",
    "WORKDIR",
    "ExecResult",
    "Isolation",
    "Mount",
    "Sandbox",
    "SandboxBusy",
    "SandboxError",
    "SandboxLimits",
    "check_all",
    "open_sandbox",
    "resolve_kind",
]
