"""The run record: ``run.json`` and the trace (:mod:`.runs`), content-addressed snapshots
(:mod:`.snapshots`, their walk split between processes in :mod:`.split_scan`), the run's
manifest (:mod:`.manifest`) and the undo store (:mod:`.backups`). A run killed at any instant
loads, scores and resumes from what is here."""

from __future__ import annotations

from environments.record.backups import Backups
from environments.record.manifest import RunManifest, ValidationCall
from environments.record.runs import (
    ENDED_STATUSES,
    FINAL_ANSWER,
    BatchRecords,
    Budgets,
    ForkOrigin,
    RunDir,
    RunMeta,
    RunReadError,
    RunStatus,
    Step,
    Totals,
    now,
    read_meta,
)
from environments.record.snapshots import Manifest, SnapshotError, SnapshotStore

__all__ = [
    "Backups",
    "BatchRecords",
    "Budgets",
    "ENDED_STATUSES",
    "FINAL_ANSWER",
    "ForkOrigin",
    "Manifest",
    "RunDir",
    "RunManifest",
    "RunMeta",
    "RunReadError",
    "RunStatus",
    "SnapshotError",
    "SnapshotStore",
    "Step",
    "Totals",
    "ValidationCall",
    "now",
    "read_meta",
]
