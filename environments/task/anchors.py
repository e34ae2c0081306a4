"""Normalized scores: fixed, versioned anchors per task (baseline = 0, reference = 1).

A raw metric is not comparable across tasks, and a stored baseline moves whenever it is
remeasured. So each task keeps ``anchors.toml`` next to its ``task.toml``: the ``version`` of
the anchors and the raw values they were measured at (``baseline``, ``reference``). They are
part of the task folder (its content hash), never rewritten by scoring, so adding agents or
runs never moves an old number; changing them means bumping ``version``. A timed task anchors
the paired log-ratio instead (``reference_log_ratio`` = ln(t_reference / t_baseline)), which
travels between machines better than seconds do: the pristine env/ is 0 by construction.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict

ANCHORS = "anchors.toml"


class Anchors(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    baseline: float | None = None
    reference: float | None = None
    reference_log_ratio: float | None = None
    note: str = ""


def load_anchors(task_root: Path) -> Anchors | None:
    path = Path(task_root) / ANCHORS
    if not path.is_file():
        return None
    return Anchors.model_validate(tomllib.loads(path.read_text()))


def normalize(anchors: Anchors | None, value: float | None,
              log_ratio: float | None = None) -> float | None:
    """``value`` on the task's fixed scale: 0 at the baseline anchor, 1 at the reference's."""
    if anchors is None:
        return None
    if log_ratio is not None and anchors.reference_log_ratio:
        return log_ratio / anchors.reference_log_ratio
    if value is None or anchors.baseline is None or anchors.reference is None:
        return None
    span = anchors.reference - anchors.baseline
    return (value - anchors.baseline) / span if span else None
