"""Runs made elsewhere brought in as labcoat runs: MLAgentBench's logs (:mod:`.mlab`)."""

from __future__ import annotations

from environments.imports.mlab import MlabImportError, find_logs, import_logs

__all__ = ["MlabImportError", "find_logs", "import_logs"]
