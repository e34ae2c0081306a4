"""A run's manifest (``run.json``'s ``manifest``): where and under what it ran, next to its score.

A number means little without its conditions (issue 16): the machine (CPU model, cores, memory,
GPUs), the sandbox backend and what it isolated (``Sandbox.describe()``), the wall clock, the
models and their providers, and the test signal the actor saw (every Validate Submission call
and what it returned). Budgets and the actor's configuration are the run's ``limits`` and
``config``, beside it in the same file, so they are not repeated here. Reports filter on all of
it (:func:`lookup`).

Reading the machine is pure file reads (``/proc``, the NVIDIA driver's ``/proc`` entries): no
subprocess, nothing downloaded, cheap enough for every run. This module imports nothing of
``runs.py``, because ``RunMeta`` holds a ``RunManifest``; a Validate Submission call is
:class:`ValidationCall`, read from the trace by ``acting.validation.validation_calls`` (one model
and one reader, for the manifest, reports and agents alike).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from sandbox.base import Isolation


class ValidationCall(BaseModel):
    """One Validate Submission step as the trace recorded it: what the actor was shown."""

    step: int
    counted: bool  # used a unit of the budget (a refusal or an infrastructure error did not)
    value: float | None = None
    failure: str | None = None
    metric: str | None = None
    left: int | None = None
    budget: int | None = None
    observation: str = ""


class Machine(BaseModel):
    cpu_model: str = ""
    cores: int = 0
    memory_gb: float = 0.0
    gpus: list[str] = Field(default_factory=list)
    os: str = ""
    python: str = ""


class ModelUse(BaseModel):
    role: str = Field(description="main, fast or edit")
    model: str
    provider: str


class RunManifest(BaseModel):
    machine: Machine = Field(default_factory=Machine)
    sandbox: Isolation | None = None
    models: list[ModelUse] = Field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    wall_seconds: float | None = Field(None, description="the run's active time (pauses left out)")
    validations: list[ValidationCall] = Field(default_factory=list)

    @property
    def backend(self) -> str | None:
        return self.sandbox.backend if self.sandbox is not None else None


def _first(path: str, key: str) -> str:
    try:
        for line in Path(path).read_text(errors="replace").splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key:
                return value.strip()
    except OSError:
        pass
    return ""


def machine() -> Machine:
    """This machine, from ``/proc`` (empty fields where a platform has no such file)."""
    mem_kb = _first("/proc/meminfo", "MemTotal").split(" ")[0]
    gpus = []
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        gpus.append(_first(str(info), "Model") or "NVIDIA GPU")
    return Machine(cpu_model=_first("/proc/cpuinfo", "model name") or platform.processor(),
                   cores=os.cpu_count() or 0,
                   memory_gb=round(int(mem_kb) / 2**20, 1) if mem_kb.isdigit() else 0.0,
                   gpus=gpus, os=platform.platform(), python=platform.python_version())


def lookup(data: dict[str, Any], key: str) -> Any:
    """A dotted key in a run's ``run.json`` (``manifest.machine.cores``, ``config.mode``), with
    short names for what reports filter on most: ``backend``, ``gpu``, ``cores``, ``cpu``,
    ``validations``. ``None`` where the run has no such value."""
    short = {"backend": "manifest.sandbox.backend", "cores": "manifest.machine.cores",
             "cpu": "manifest.machine.cpu_model", "mode": "config.mode", "kind": "config.kind"}
    if key == "gpu":
        gpus = lookup(data, "manifest.machine.gpus") or []
        return ",".join(gpus) if gpus else "none"
    if key == "validations":
        return len(lookup(data, "manifest.validations") or [])
    value: Any = data
    for part in short.get(key, key).split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value
