"""A run and its forks: continuations of the same prefix, compared (only reads run dirs).

A fork (``labcoat run --fork RUN_DIR --at K``) records its parent in ``run.json``
(``RunMeta.fork``) and the parent lists it in ``forks.jsonl``, so a family is found from any
member wherever its forks were written: up the ``fork.parent_dir`` chain to the original,
then down every ``forks.jsonl``. What is compared is what differs after the fork point: the
score at each step (``scores.json``/``score.json``; a fork's steps 1..K are its parent's, so
only its own are listed) and the final workspaces (the last recorded snapshot, which is what
scoring reads), as changed paths and unified diffs: code first, and data files (a submission
CSV, a long diff) summarised as lines changed unless asked in full.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import BaseModel, Field

from environments.record.runs import RunDir, RunReadError
from environments.reports.records import model_label
from environments.reports.table import md_table
from environments.scoring.score import Score, load_scores
from environments.untrusted.words import gain, metric

#: larger files (or ones that are not UTF-8) are compared by hash and size only
MAX_DIFF_BYTES = 256 << 10


class Member(BaseModel):
    """One run of a family as the comparison shows it."""

    run_id: str
    path: str
    parent: str | None = Field(None, description="the run it was forked from (None: the original)")
    at: int = Field(0, description="the fork point: steps 1..at are the parent's")
    depth: int = 0
    label: str
    status: str
    steps: int
    own_steps: int = Field(description="steps taken in this run, not inherited")
    score: Score | None = None
    curve: dict[int, float | None] = Field(default_factory=dict,
                                           description="step -> metric value, own steps only")


class Family(BaseModel):
    """The original first, then each fork right after the run it was forked from."""

    members: list[Member]
    skipped: list[str] = Field(default_factory=list, description="forks whose run.json or "
                               "score.json cannot be read: why, one line each")

    @property
    def root(self) -> Member:
        return self.members[0]


def root_of(run: RunDir) -> RunDir:
    """The original run of ``run``'s family (itself when it is no fork, or when its parent's
    folder is gone)."""
    seen = {run.path}
    while run.meta.fork is not None:
        parent_dir = Path(run.meta.fork.parent_dir)
        if not (parent_dir / "run.json").exists() or parent_dir.resolve() in seen:
            break
        try:
            run = RunDir.open(parent_dir, newer_ok=True)
        except RunReadError:  # a broken parent: the family starts below it
            break
        seen.add(run.path)
    return run


def _member(run: RunDir, depth: int) -> Member:
    steps = run.steps(trim=False)
    fork = run.meta.fork
    at = fork.step if fork else 0
    scores = load_scores(run.path)
    final = Path(run.path) / "score.json"
    return Member(
        run_id=run.meta.run_id, path=str(run.path), parent=fork.parent if fork else None, at=at,
        depth=depth, label=model_label(run.meta), status=run.meta.status, steps=len(steps),
        own_steps=sum(not s.inherited for s in steps),
        score=Score.model_validate_json(final.read_text()) if final.exists() else None,
        curve={i: s.value for i, s in scores.items() if i > at})


def load_family(run_dir: str | Path) -> Family:
    """The family ``run_dir`` belongs to (any member will do)."""
    members: list[Member] = []
    skipped: list[str] = []
    seen: set[Path] = set()
    stack = [(root_of(RunDir.open(run_dir, newer_ok=True)), 0)]
    while stack:
        run, depth = stack.pop()
        if run.path in seen:
            continue
        seen.add(run.path)
        try:
            members.append(_member(run, depth))
        except (OSError, ValueError) as err:  # its score.json broken
            skipped.append(f"{run.path / 'score.json'}: cannot be read ({str(err).splitlines()[0][:120]})")
            continue
        children = []
        for record in run.forks():
            try:
                children.append(RunDir.open(record.path, newer_ok=True))
            except RunReadError as err:  # one broken fork never hides the others
                skipped.append(str(err))
        stack += [(child, depth + 1) for child in reversed(children)]
    if not members:
        raise RunReadError("; ".join(skipped))
    return Family(members=members, skipped=skipped)


def _value(score: Score | None) -> str:
    if score is None:
        return "unscored"
    if score.value is None:
        return f"failed ({score.failure})"
    norm = "" if score.normalized is None else f", normalized {score.normalized:.2f}"
    imp = "" if score.improvement is None else f" ({gain(score.improvement)}{norm})"
    return f"{metric(score.value)}{imp}" + (" ✓" if score.success else "")


FAMILY_COLUMNS = ["run", "forked from", "at", "actor", "status", "steps (own)", "final score",
                  "score after the fork point"]


def member_cells(m: Member) -> list[str]:
    curve = ", ".join(f"{i}: {'—' if v is None else metric(v)}" for i, v in m.curve.items()) or "—"
    return [("  " * (m.depth - 1) + "└ " if m.depth else "") + m.run_id, m.parent or "(original)", str(m.at) if m.parent else "—",
            m.label, m.status, f"{m.steps} ({m.own_steps})", _value(m.score), curve]


def score_by_step(family: Family) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the step × member table: each scored step's value in each run,
    a fork's inherited steps left blank (they are its parent's)."""
    steps = sorted({i for m in family.members for i in m.curve})
    header = ["step", *(m.run_id for m in family.members)]
    rows = [[str(i), *("" if i not in m.curve else "—" if m.curve[i] is None else metric(m.curve[i])
                       for m in family.members)] for i in steps]
    return header, rows


def family_markdown(family: Family) -> str:
    parts = [md_table(FAMILY_COLUMNS, [member_cells(m) for m in family.members])]
    header, rows = score_by_step(family)
    if rows:
        parts.append("Metric value by step (a fork's steps up to its fork point are its parent's):\n\n"
                     + md_table(header, rows))
    else:
        parts.append("No step scored yet: `labcoat score --all-steps RUN_DIR` draws the curves.")
    return "\n\n".join(parts)


# ---- final workspaces -------------------------------------------------------------------

#: files whose diff a reader skims: data an actor's script wrote, not the research itself
DATA_SUFFIXES = frozenset({".csv", ".tsv", ".jsonl", ".ndjson", ".txt", ".log"})
#: files read as the research itself, shown first
CODE_SUFFIXES = frozenset({".py", ".sh", ".ipynb", ".toml", ".yaml", ".yml", ".cfg", ".md"})
#: a text diff with more changed lines than this is summarised too (unless asked in full)
MAX_SHOWN_LINES = 200


class FileDiff(BaseModel):
    path: str
    change: str = Field(description="added | removed | changed (in b relative to a)")
    diff: str = Field("", description="unified diff of text files; empty for other files")
    note: str = ""
    added: int = Field(0, description="lines added (text files)")
    removed: int = Field(0, description="lines removed (text files)")

    @property
    def is_code(self) -> bool:
        return Path(self.path).suffix.lower() in CODE_SUFFIXES

    @property
    def is_data(self) -> bool:
        """Data (a submission CSV, a log) or a diff too long to read: summarised by default."""
        return (not self.is_code and Path(self.path).suffix.lower() in DATA_SUFFIXES) \
            or self.added + self.removed > MAX_SHOWN_LINES

    def lines(self, full: bool = False) -> list[str]:
        """What a reader sees of this file: its diff, or for data (unless ``full``) how many
        lines changed; a file not compared as text says why."""
        if self.note:
            return [f"  {self.path}: {self.note}"]
        if self.diff and (full or not self.is_data):
            return [self.diff.rstrip("\n")]
        if self.diff:
            return [f"  {self.path}: {self.added + self.removed:,} lines changed "
                    f"(+{self.added:,} -{self.removed:,}; --full shows the diff)"]
        return []


class WorkspaceDiff(BaseModel):
    a: str
    b: str
    files: list[FileDiff]

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    def report(self, full: bool = False) -> list[str]:
        """The text ``report family --diff`` prints: what changed, then each file's diff with
        the code first (the scripts are what a fork changed; the data they wrote follows,
        summarised unless ``full``)."""
        files = sorted(self.files, key=lambda f: (f.is_data, not f.is_code, f.path))
        head = f"{self.b} vs {self.a}: " + (", ".join(f"{f.change} {f.path}" for f in files)
                                           or "identical final workspaces")
        return [head, *(line for f in files for line in f.lines(full))]


def final_label(run: RunDir) -> str:
    """The snapshot of the run's last recorded step (what scoring reads as its final workspace)."""
    return f"{len(run.steps(trim=False)):05d}"


def _text(data: bytes) -> str | None:
    if len(data) > MAX_DIFF_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def diff_workspaces(a: RunDir, b: RunDir) -> WorkspaceDiff:
    """How ``b``'s final workspace differs from ``a``'s, file by file (by content hash)."""
    la, lb = final_label(a), final_label(b)
    ma, mb = a.snapshots.load(la), b.snapshots.load(lb)
    files = []
    for rel in mb.changed_since(ma):
        ea, eb = ma.files.get(rel), mb.files.get(rel)
        change = "added" if ea is None else "removed" if eb is None else "changed"
        old = a.snapshots.read(la, rel, limit=MAX_DIFF_BYTES + 1) if ea else b""
        new = b.snapshots.read(lb, rel, limit=MAX_DIFF_BYTES + 1) if eb else b""
        told, tnew = _text(old), _text(new)
        if told is None or tnew is None:
            sizes = f"{ea.size if ea else 0:,} -> {eb.size if eb else 0:,} bytes"
            files.append(FileDiff(path=rel, change=change, note=f"not compared as text: {sizes}"))
            continue
        lines = list(difflib.unified_diff(told.splitlines(keepends=True), tnew.splitlines(keepends=True),
                                          f"{a.meta.run_id}/{rel}", f"{b.meta.run_id}/{rel}"))
        body = [line for line in lines[2:] if not line.startswith("@@")]
        files.append(FileDiff(path=rel, change=change, diff="".join(lines),
                              added=sum(line.startswith("+") for line in body),
                              removed=sum(line.startswith("-") for line in body)))
    return WorkspaceDiff(a=a.meta.run_id, b=b.meta.run_id, files=files)
