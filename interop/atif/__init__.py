"""labcoat runs as ATIF trajectories (Harbor's Agent Trajectory Interchange Format, v1.7):
the format's objects as pydantic models (:mod:`.models`) and a run folder's export
(:mod:`.export`, ``labcoat export atif``)."""

from __future__ import annotations

from interop.atif.export import dumps, export_run, find_runs
from interop.atif.models import SCHEMA_VERSION, Trajectory

__all__ = ["SCHEMA_VERSION", "Trajectory", "dumps", "export_run", "find_runs"]
