"""Runs as a report reads them: one typed :class:`RunRecord` per run folder (reading is all it does).

A record's :class:`RowKey` says which row it belongs to — task, actor kind, model, whether its
code ran isolated, whether the task's method tools were offered, and what kind of attempt it
is — as data, so a reader (``agent/uplift.py``, ``--compare``) never parses a display label.

Attempts (:data:`Attempt`): a row aggregates *independent* attempts, one per task × actor ×
seed. A fork continues another run's prefix, an interrupted run was stopped (or is still
going), a resumed run was stopped and continued, and a second attempt with the same task ×
actor × seed repeats the first: each is shown in a row of its own kind and pooled only when
asked (``pool_all``). A fork's inherited steps, tokens, cost and seconds are its parent's:
its record holds its own share only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from environments.record.manifest import lookup
from environments.record.runs import (
    ENDED_STATUSES,
    BatchRecords,
    RunMeta,
    RunReadError,
    read_meta,
)
from environments.reports.steps import read_step_times, read_step_tokens
from environments.scoring.score import Score, load_scores
from environments.task.anchors import load_anchors
from environments.task.suite import apart_from_suite

Attempt = Literal["independent", "fork", "interrupted", "resumed", "repeat", "pooled", "unknown"]
#: what a row of each attempt kind says after its label (independent and pooled say nothing)
ATTEMPT_NOTE: dict[str, str] = {"fork": "forks", "interrupted": "interrupted", "resumed": "resumed",
                                "repeat": "repeats (same seed)",
                                "unknown": "status unknown (a newer labcoat's)"}
#: told each run folder a report skips, and why in one line (the file and what is wrong)
OnSkip = Callable[[Path, str], None]
UNISOLATED = " (UNISOLATED: --sandbox none)"
NO_TOOLS = " (no method tools)"
#: agents that take the research agent's model strings, so a row must name them
SHARES_MODELS = ("tree",)
_SKIP_DIRS = {"workspace", "snapshots", "backups"}


class RowKey(BaseModel):
    """Which report row a run belongs to; ``label`` is only how the row is shown."""

    model_config = ConfigDict(frozen=True)

    task: str
    actor: str = Field(description="the actor kind: research, tree, baseline, human, replay, ...")
    model: str | None = None
    isolated: bool = True
    method_tools: bool = True
    attempt: Attempt = "independent"
    source: str | None = Field(None, description="a folder compared as a whole (--compare A B): "
                               "its name is the label")

    @property
    def who(self) -> str:
        """The model string, else the actor kind (what uplift pairs and --compare names)."""
        return self.model or self.actor

    @property
    def label(self) -> str:
        """The row as people read it: ``tree: M`` beside the research agent's ``M``, and the
        flags that keep a row apart spelled out."""
        if self.source is not None:
            return self.source
        label = f"{self.actor}: {self.model}" if self.model and self.actor in SHARES_MODELS else self.who
        label += "" if self.method_tools else NO_TOOLS
        label += "" if self.isolated else UNISOLATED
        note = ATTEMPT_NOTE.get(self.attempt)
        return f"{label} · {note}" if note else label


class RunRecord(BaseModel):
    """One run as a report sees it."""

    path: str
    run_id: str
    key: RowKey
    seed: int = 0
    status: str
    created_at: str = ""
    steps: int = Field(0, description="steps taken in this run (a fork's inherited ones are its parent's)")
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    score: Score | None = None
    curve: dict[int, float | None] = Field(default_factory=dict, description="step -> improvement")
    error: str | None = Field(None, description="why a batch combination never made a run")
    anchored: bool = Field(False, description="the task has anchors, so normalized scores exist")
    normalized_curve: dict[int, float] = Field(
        default_factory=dict, description="step -> normalized score (failures as 0: see step_value)")
    step_seconds: dict[int, float] = Field(
        default_factory=dict, description="step -> wall-clock seconds since the run started")
    step_tokens: dict[int, int] = Field(
        default_factory=dict, description="step -> tokens spent up to and including the step")
    last_step: int = Field(0, description="the run's last step number (a fork's counts its prefix)")

    @computed_field
    @property
    def task(self) -> str:
        return self.key.task

    @computed_field
    @property
    def model(self) -> str:
        """The row's label (kept in ``--json`` under its old name)."""
        return self.key.label

    @property
    def attempt(self) -> Attempt:
        return self.key.attempt

    @property
    def outcome(self) -> str:
        """``success``, ``below_threshold``, a failure reason, or ``unscored``."""
        if self.error is not None:
            return "not_run"
        if self.score is None:
            return "unscored"
        if self.score.failure is not None:
            return self.score.failure
        if self.score.improvement is None:
            return "no_baseline"
        return "success" if self.score.success else "below_threshold"

    @property
    def improvement(self) -> float | None:
        return self.score.improvement if self.score is not None else None

    @property
    def value(self) -> float | None:
        return self.score.value if self.score is not None else None

    @property
    def normalized(self) -> float | None:
        return self.score.normalized if self.score is not None else None

    @property
    def best_improvement(self) -> float | None:
        values = [v for v in self.curve.values() if v is not None]
        if self.improvement is not None:
            values.append(self.improvement)
        return max(values) if values else None


def attempt_of(meta: RunMeta) -> Attempt:
    """What kind of attempt a run is, from its own record (repeats need the others:
    :func:`mark_repeats`). A run still going counts as interrupted until it ends; one in a
    status a newer labcoat wrote is none of these (``unknown``)."""
    if meta.status == "unknown":
        return "unknown"
    if meta.fork is not None:
        return "fork"
    if meta.status not in ENDED_STATUSES and meta.status != "error":
        return "interrupted"
    if getattr(meta, "resumed", 0):
        return "resumed"
    return "independent"


def row_key(meta: RunMeta, method_tools: bool = True) -> RowKey:
    return RowKey(task=apart_from_suite(meta.task, meta.task_source), actor=meta.agent or meta.actor,
                  model=meta.model,
                  isolated=meta.sandbox != "none", method_tools=method_tools, attempt=attempt_of(meta))


def model_label(meta: RunMeta, method_tools: bool = True) -> str:
    """A run's label without its attempt kind (the family table names each run's actor)."""
    return row_key(meta, method_tools).model_copy(update={"attempt": "independent"}).label


def offered_method_tools(path: Path, meta: RunMeta) -> bool:
    """Whether the run's actor was offered the task's method tools.

    A batch records that in its spec (``method_tools``, ``agent/batch.py``), and a batch's runs
    lie at ``BATCH/runs/<key>/<run_id>/``; read from there (not ``meta.batch``, which a moved
    folder leaves stale). A run's own config saying so (``config.method_tools``) wins.
    """
    own = getattr(meta.config, "method_tools", None)
    if isinstance(own, bool):
        return own
    if meta.batch is None or len(path.parents) < 3:
        return True
    try:
        batch = _BatchArms.model_validate_json((path.parents[2] / "batch.json").read_text())
    except (OSError, ValueError):
        return True
    return batch.spec is None or batch.spec.method_tools


class _Arm(BaseModel):
    method_tools: bool = True


class _BatchArms(BaseModel):
    """What a report reads of a batch's spec (``agent.batch.BatchSpec`` is the agent room's)."""

    spec: _Arm | None = None


def find_run_dirs(root: str | Path) -> list[Path]:
    """Every folder under ``root`` (or ``root`` itself) holding a ``run.json``.

    Hidden folders (a batch's ``.retired/`` attempts) and a run's own inner folders are skipped.
    """
    root = Path(root)
    if (root / "run.json").is_file():
        return [root]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if "run.json" in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
    return sorted(found)


def parse_where(clauses: Iterable[str]) -> dict[str, str]:
    """``["backend=docker", "config.mode=tools"]`` -> a filter; a clause without ``=`` is an error."""
    out = {}
    for clause in clauses:
        key, sep, value = clause.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--where {clause!r}: write KEY=VALUE (e.g. backend=docker, "
                             "config.mode=tools, manifest.machine.cores=16)")
        out[key.strip()] = value.strip()
    return out


def _text(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return str(value).lower()
    return str(value)


def matches(meta: RunMeta, where: Mapping[str, str]) -> bool:
    """Whether a run's ``run.json`` has every ``key=value`` of ``where`` (keys as
    :func:`environments.record.manifest.lookup` reads them; values compared as text)."""
    if not where:
        return True
    data = meta.model_dump(mode="json")
    return all(_text(lookup(data, k)) == v for k, v in where.items())


def step_value(score: Score | None, anchored: bool) -> float | None:
    """A scored snapshot's normalized score as curves and uplift count it.

    An evaluation the submission failed (no submission, eval error, timeout) earned nothing
    over the baseline, so it counts as the baseline anchor's 0 rather than vanishing (which
    would leave only the lucky runs in a mean). An infrastructure failure says nothing about
    the actor and a task without anchors has no scale: both are ``None`` (no value).
    """
    if score is None or not anchored or score.failure == "infrastructure":
        return None
    if score.failure is not None:
        return 0.0
    return score.normalized


def _read_scores(path: Path) -> tuple[Score | None, dict[int, Score]]:
    """The run's result (``score.json``) and its scored steps, or :class:`RunReadError`
    naming the file that cannot be read."""
    file = path / "score.json"
    try:
        score = Score.model_validate_json(file.read_bytes()) if file.is_file() else None
        file = path / "scores.json"  # load_scores reads score.json again: read above
        return score, load_scores(path)
    except (OSError, ValueError) as err:
        why = str(err).splitlines()[0][:120] if str(err) else type(err).__name__
        raise RunReadError(f"{file}: cannot be read as scores ({why})") from None


def load_run(path: str | Path, meta: RunMeta | None = None) -> RunRecord:
    path = Path(path)
    meta = meta or read_meta(path, newer_ok=True)
    score, scores = _read_scores(path)
    try:
        anchored = load_anchors(Path(meta.task_root)) is not None
    except (OSError, ValueError):
        anchored = False
    # the prepared copy may be gone (cache cleared): a normalized value shows the anchors existed
    anchored = anchored or any(s.normalized is not None for s in scores.values())
    normalized = {step: v for step, s in scores.items() if (v := step_value(s, anchored)) is not None}
    seconds: dict[int, float] = {}
    tokens: dict[int, int] = {}
    if normalized:  # only a run on a curve pays for reading its trace and call log
        start = meta.manifest.started_at if meta.manifest and meta.manifest.started_at else meta.created_at
        seconds, tokens = read_step_times(path, start), read_step_tokens(path)
    t = meta.totals
    own = meta.fork.inherited if meta.fork is not None else None  # the parent's share, not ours
    return RunRecord(
        path=str(path), run_id=meta.run_id, key=row_key(meta, offered_method_tools(path, meta)),
        seed=meta.seed, created_at=meta.created_at,
        status=meta.status if meta.newer_status is None else f"unknown: {meta.newer_status}",
        steps=max(0, t.steps - (own.steps if own else 0)),
        tokens=max(0, t.tokens_in + t.tokens_out - (own.tokens_in + own.tokens_out if own else 0)),
        cost=max(0.0, t.cost - (own.cost if own else 0.0)),
        seconds=max(0.0, t.seconds - (own.seconds if own else 0.0)),
        score=score, curve={step: s.improvement for step, s in scores.items()}, anchored=anchored,
        normalized_curve=normalized, step_seconds=seconds, step_tokens=tokens, last_step=t.steps,
    )


def lost_combinations(root: str | Path) -> list[RunRecord]:
    """Batch combinations (``batch.json`` under ``root``) that failed before making a run dir.

    They count as runs that failed (outcome ``not_run``) so a crash is never dropped silently.
    """
    records = []
    for manifest in sorted(Path(root).rglob("batch.json")):
        if any(part.startswith(".") for part in manifest.relative_to(root).parts):
            continue
        try:
            combos = BatchRecords.model_validate_json(manifest.read_text()).combos
        except (OSError, ValueError):
            continue
        for key, c in combos.items():
            if c.state == "failed" and not c.run_dir:
                records.append(RunRecord(
                    path=str(manifest.parent / "runs" / key), run_id=f"{key} (no run)",
                    key=RowKey(task=Path(c.task).name, actor=c.model, model=c.model), seed=c.seed,
                    status="error", error=(c.error or "").strip()[:500]))
    return records


def mark_repeats(records: list[RunRecord]) -> list[RunRecord]:
    """Independent attempts with the same row and seed repeat one experiment: the latest
    (by creation time) stays independent, the earlier ones become ``repeat``."""
    latest: dict[tuple[RowKey, int], RunRecord] = {}
    for r in records:
        if r.attempt == "independent":
            slot = (r.key, r.seed)
            if slot not in latest or r.created_at >= latest[slot].created_at:
                latest[slot] = r
    keep = {id(r) for r in latest.values()}
    return [r if r.attempt != "independent" or id(r) in keep
            else r.model_copy(update={"key": r.key.model_copy(update={"attempt": "repeat"})})
            for r in records]


def load_runs(*roots: str | Path, label: str | None = None,
              where: Mapping[str, str] | None = None, pool_all: bool = False,
              on_skip: OnSkip | None = None) -> list[RunRecord]:
    """All runs under ``roots`` (and batch combinations lost before their run started), each
    keyed by its attempt kind (``pool_all``: every run in one pool per row, as ``pooled``).
    ``label`` names every run's row (a folder compared as a whole). ``where`` keeps only runs
    whose ``run.json`` matches (:func:`matches`); lost combinations have no run.json to match,
    so a filtered report leaves them out.

    A run folder that cannot be read (its run.json corrupt or empty, its score.json broken) is
    left out and ``on_skip(folder, why)`` told, so one broken folder never hides the others;
    a run a newer labcoat wrote in a status this one does not know is read (``unknown``)."""
    records = []
    for p in (p for root in roots for p in find_run_dirs(root)):
        try:
            meta = read_meta(p, newer_ok=True)
            if matches(meta, where or {}):
                records.append(load_run(p, meta))
        except RunReadError as err:
            if on_skip is not None:
                on_skip(p, str(err))
    if not where:
        records += [r for root in roots for r in lost_combinations(root)]
    records = mark_repeats(records)
    update: dict[str, Any] = {"source": label} if label is not None else {}
    if pool_all:
        update["attempt"] = "pooled"
    if update:
        records = [r.model_copy(update={"key": r.key.model_copy(update=update)}) for r in records]
    return records
