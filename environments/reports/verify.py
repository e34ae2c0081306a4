"""``labcoat verify``: what a run's test-exposure ledger proves, checked three ways.

The ledger (``exposure.jsonl``, :mod:`environments.record.ledger`) says which private split was
scored, by whom, for which step, and what it revealed. A verdict holds only if

1. **the chain is intact**: every line hashes to what it carries and links to the one before
   (a dropped, edited or moved line shows at that line);
2. **it matches the trace and the records**, re-derived here, not read from the ledger: each
   Validate Submission step (the agent's call on ``search``), each harness ``Score Candidate``
   step (``search`` or ``select``) and each scored step (``score.json``, ``scores.json``: the
   harness on ``test``) has its line, with the same split, actor, step and revealed value, and no
   line claims a call the trace does not show (so dropping the ledger's last lines, or rewriting
   a line and every hash after it, still shows against the run's other records);
3. **its hashes are the task's as it is now**: the scorer and each split's data the run was
   scored with are what the prepared task holds, so "no test signal reached the agent" is about
   the test set a reader can score with today.

What it cannot see is said in docs (``what verify proves``): an agent that memorised a public
data set reveals nothing here; a forger who rewrites the ledger, the trace and the records
together is caught only against a head hash published before (:attr:`Verdict.head`).
"""

from __future__ import annotations

import math
import stat
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field, computed_field

from environments.record import ledger
from environments.record.runs import RunDir, RunReadError, Step
from environments.scoring.hidden import TaskHashes, image_identity, task_hashes
from environments.scoring.score import Score, load_result, load_scores
from environments.task.spec import TaskSpec
from environments.task.splits import SPLITS
from environments.untrusted.words import metric, plural

VALIDATE = "Validate Submission"  # environments.acting.validation.VALIDATE (a floor above: not imported)
SCORE_CANDIDATE = "Score Candidate"
RECORD_NODE = "Record Node"  # environments.acting.pool_node: a pool node scored where it ran
NO_LEDGER = ("the run has no ledger (exposure.jsonl): it was made before labcoat kept one, or "
             "imported, so what reached its agent cannot be checked")
RECORDS = ("trace.jsonl", ledger.LEDGER, "score.json", "scores.json")  # what a verdict reads
TEST_ABOUT = "the task's test set: what `labcoat score` reads"
SCORER_FILES = "scripts/eval.py, produce.py and inputs/"


class SplitSummary(BaseModel):
    """One private split: what it is, and who scored on it how often."""

    name: str
    about: str = ""
    agent: int = Field(0, description="calls the agent made on it (through an action)")
    harness: int = Field(0, description="calls the harness made on it")
    shown_to_agent: int = Field(0, description="calls whose result the agent was shown")


class Verdict(BaseModel):
    """What ``labcoat verify RUN`` found; ``problems`` say why any check failed, one sentence each."""

    run: str
    path: str
    task: str
    splits: list[SplitSummary]
    calls: dict[str, dict[str, int]] = Field(description="split -> {'agent': n, 'harness': n}")
    test_seen_by_agent: bool | None = Field(description="any call on test by the agent, or shown "
                                            "to it; None: the run has no ledger to say")
    ledger_intact: bool
    matches_trace: bool
    hashes_match: bool
    head: str = Field(description="the last line's hash: publish it to pin the whole ledger")
    lines: int
    problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="what is worth knowing but fails "
                             "nothing (a different sandbox image)")

    @computed_field  # in the JSON too: what `labcoat verify` exits 0 on
    @property
    def ok(self) -> bool:
        return self.ledger_intact and self.matches_trace and self.hashes_match

    def summary(self) -> str:
        """One line: ``ledger: intact, test not seen by the agent``, or the first problem."""
        if not self.ok:
            return f"ledger: {self.problems[0]}" if self.problems else "ledger: not verified"
        seen = "test SEEN by the agent" if self.test_seen_by_agent else "test not seen by the agent"
        return f"ledger: intact, {seen}"


@dataclass(frozen=True)
class Expected:
    """A call the trace or the records say happened, so the ledger must hold it."""

    where: str
    actor: str
    split: str
    step: int
    value: float | None
    failure: str | None
    node: int | None = None
    final: bool = False  # score.json: the run's result, a ``final`` line
    at: str = ""  # a score record's time (a trace step's call is placed by its step)
    by_node: bool = False  # a pool node: its line names the node, not a step (scored on a worker)


Line = tuple[int, ledger.Entry]  # (1-based line number, entry)


def _irregular(folder: Path, names: tuple[str, ...]) -> list[str]:
    """The records among ``names`` that are there but are no plain file (a link, a FIFO, a
    device): a verifier reads folders others made, and reading one of those could hang or
    leave the run."""
    found = []
    for name in names:
        try:
            if not stat.S_ISREG((folder / name).lstat().st_mode):
                found.append(name)
        except FileNotFoundError:
            continue
    return found


def verify_run(run_path: Path, task: TaskSpec | None = None) -> Verdict:
    """Check ``run_path``'s ledger (``task``: the run's task, loaded when not given).
    :class:`RunReadError` when ``run_path`` is no readable run (no plain ``run.json``)."""
    if _irregular(Path(run_path), ("run.json",)):
        raise RunReadError(f"{run_path}: run.json is not a regular file")
    run = RunDir.open(run_path, newer_ok=True)
    problems = [f"{name} is not a regular file (a link, a FIFO or a device), so it was not read"
                for name in _irregular(run.path, RECORDS)]
    if problems:
        return Verdict(run=run.meta.run_id, path=str(run.path), task=run.meta.task, splits=[],
                       calls={}, test_seen_by_agent=None, ledger_intact=False, matches_trace=False,
                       hashes_match=False, head="", lines=0, problems=problems)
    raw = ledger.read_lines(run.path)
    entries = _parse(raw)
    chain = _chain(raw, entries) if raw else []
    mismatch = _match(run, entries) if raw else []
    unloaded: list[str] = []
    if task is None:
        try:
            task = run.task()
        except Exception as err:  # noqa: BLE001 - any reason the task cannot be had is said
            unloaded = [f"the run's task cannot be loaded to compare hashes: {err}"]
    changed, notes = _hash_problems(entries, task, run.meta.sandbox) if raw and task else ([], [])
    splits = _splits(entries, task)
    return Verdict(
        run=run.meta.run_id, path=str(run.path), task=run.meta.task, splits=splits,
        calls={s.name: {"agent": s.agent, "harness": s.harness} for s in splits},
        test_seen_by_agent=None if not raw else any(
            e.split == "test" and (e.actor == "agent" or e.shown_to_agent) for _, e in _calls_of(entries)),
        ledger_intact=bool(raw) and not chain, matches_trace=bool(raw) and not mismatch,
        hashes_match=bool(raw) and task is not None and not changed,
        head=ledger.head(raw), lines=len(raw),
        problems=[*([] if raw else [NO_LEDGER]), *chain, *mismatch, *unloaded, *changed],
        notes=[*notes, *parent_notes(run, entries)])


def _chain(raw: list[str], entries: list[Line]) -> list[str]:
    """What is wrong with the chain itself, and a ledger that does not begin with ``open``."""
    problems = ledger.check_chain(raw)
    if not problems and entries and entries[0][1].event != "open":
        problems.append("the ledger does not begin with the run's open line: its first lines were cut")
    return problems


def _parse(raw: list[str]) -> list[Line]:
    """The lines that are entries (one that is not is :func:`ledger.check_chain`'s to report)."""
    found = []
    for i, line in enumerate(raw, 1):
        try:
            found.append((i, ledger.Entry.model_validate_json(line)))
        except ValueError:
            continue
    return found


def _calls_of(entries: list[Line]) -> list[Line]:
    return [(i, e) for i, e in entries if e.event == "call"]


# ---- the ledger against the trace and the records --------------------------------------------

def expected_calls(steps: list[Step], result: Score | None, scores: dict[int, Score]) -> list[Expected]:
    """Every call the trace and the score records show, re-derived without the ledger."""
    found = []
    for s in steps:
        data = s.data or {}
        if "value" not in data or data.get("refused"):  # refused, or no scoring: nothing revealed
            continue
        if s.action == VALIDATE:
            found.append(Expected(f"trace step {s.index} ({VALIDATE})", "agent",
                                  str(data.get("split") or "search"), s.index,
                                  data.get("value"), data.get("failure")))
        elif s.action == SCORE_CANDIDATE and data.get("split"):
            found.append(Expected(f"trace step {s.index} ({SCORE_CANDIDATE} on {data['split']})",
                                  "harness", str(data["split"]), s.index, data.get("value"),
                                  data.get("failure"), node=data.get("node")))
        elif s.action == RECORD_NODE and data.get("split") and isinstance(data.get("node"), int):
            found.append(Expected(f"trace step {s.index} ({RECORD_NODE} {data['node']})", "harness",
                                  str(data["split"]), s.index, data.get("value"), data.get("failure"),
                                  node=data["node"], by_node=True))
    if result is not None and result.step is not None and result.failure != "infrastructure":
        found.append(Expected(f"score.json (the run's result, step {result.step})", "harness",
                              result.split, result.step, result.value, result.failure, final=True,
                              at=result.scored_at))
    for k, s in scores.items():
        if s.failure != "infrastructure":  # nothing evaluated: nothing revealed
            found.append(Expected(f"scores.json (step {k})", "harness", s.split, k, s.value, s.failure,
                                  at=s.scored_at))
    return found


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


def _said(value: float | None, failure: str | None) -> str:
    number = metric(None if value is None else value + 0.0)  # -0.0 said as 0
    if failure is None:
        return number
    return f"a failure ({failure})" if value is None else f"{number} with a failure ({failure})"


def _match(run: RunDir, entries: list[Line]) -> list[str]:
    """Where the ledger and the trace or records disagree, one sentence each."""
    problems: list[str] = []
    steps = run.steps(trim=False)  # only reading: a live run's last line may be mid-write
    try:
        result, scores = load_result(run.path), load_scores(run.path)
    except (OSError, ValueError) as err:
        problems.append(f"the run's score records (scores.json) cannot be read: {str(err).splitlines()[0]}")
        result, scores = load_result(run.path), {}
    by_key: dict[tuple, list[Line]] = defaultdict(list)
    for i, e in _calls_of(entries):
        by_key[(e.actor, e.split, e.step)].append((i, e))
    wanted = expected_calls(steps, result, scores)
    after, opened = _began(entries)
    before: set[tuple] = set()  # calls made before the ledger began (a run older than its ledger)
    for x in wanted:
        lines = by_key.get((x.actor, x.split, None if x.by_node else x.step), [])
        if x.by_node:
            lines = [(i, e) for i, e in lines if e.node == x.node]
        if x.final:
            lines = [(i, e) for i, e in lines if e.purpose == "final"] or lines
        if not lines and (x.at < opened if x.at else x.step <= after):
            before.add((x.actor, x.split, x.step))  # score.json's scoring is in scores.json too
            continue
        if not lines:
            problems.append(f"{x.where} has no ledger line ({x.actor} on {x.split}): a line was "
                            "dropped, or the step or record was added afterwards")
            continue
        if x.actor == "agent" and len(lines) > 1:
            problems.append(f"ledger lines {', '.join(str(i) for i, _ in lines)} all record the "
                            f"agent's one call at step {x.step}: lines were added")
        i, e = lines[-1]  # the latest scoring is the one a record holds
        shown = e.revealed or ledger.Revealed()
        if not (_same(shown.value, x.value) and shown.failure == x.failure):
            problems.append(f"{x.where} says it revealed {_said(x.value, x.failure)}, but its ledger "
                            f"line {i} says {_said(shown.value, shown.failure)}: the trace, the "
                            "record or the ledger was edited")
        elif x.node is not None and e.node != x.node:
            problems.append(f"{x.where} scored node {x.node}, but its ledger line {i} says node {e.node}")
    if before:
        problems.insert(0, f"the ledger began after step {after} (the run is older than its "
                        f"ledger): {plural(len(before), 'call')} the trace or the score records show "
                        "before it are not in it, so what reached the agent then cannot be checked")
    problems += _unclaimed(entries, steps, wanted)
    problems += _cut(entries, steps)
    return problems


def _began(entries: list[Line]) -> tuple[int, str]:
    """(the steps the trace held when the ledger began, when it began): a run from before
    labcoat kept a ledger gets one when it is resumed (``open`` then ``resume`` after K steps)
    or scored (``open`` saying its ``steps``)."""
    if not entries or entries[0][1].event != "open":
        return 0, ""
    first = entries[0][1]
    held = first.detail.get("steps")
    if not isinstance(held, int) and len(entries) > 1 and entries[1][1].event == "resume":
        held = entries[1][1].detail.get("steps")
    return (held if isinstance(held, int) else 0), first.at


def _cut(entries: list[Line], steps: list[Step]) -> list[str]:
    """A ``resume`` or ``fork`` line names how many steps the trace held then: never more than now."""
    problems = []
    for i, e in entries:
        held = e.detail.get("steps")
        if e.event in ("resume", "fork") and isinstance(held, int) and held > len(steps):
            problems.append(f"ledger line {i} says the trace held {plural(held, 'step')} when the "
                            f"run was {'resumed' if e.event == 'resume' else 'forked'}, but it holds "
                            f"{len(steps)} now: steps were cut from the trace")
    return problems


def parent_notes(run: RunDir, entries: list[Line]) -> list[str]:
    """A fork's ``fork`` line pins its parent's ledger head: where the parent is still here, its
    ledger must hold that line (else the calls carried from it cannot be checked there)."""
    if run.meta.fork is None:
        return []
    parent = Path(run.meta.fork.parent_dir)
    notes = []
    for i, e in entries:
        head = e.detail.get("parent_head")
        if e.event != "fork" or not isinstance(head, str) or not (parent / "run.json").is_file():
            continue
        if _irregular(parent, (ledger.LEDGER,)):
            notes.append(f"the parent run's ledger ({parent}) is not a regular file: not read")
        elif head != ledger.GENESIS and head not in {x.hash for _, x in _parse(ledger.read_lines(parent))}:
            notes.append(f"ledger line {i} pins the parent's ledger at {_short(head)}, which the "
                         f"parent's ledger ({parent}) no longer holds: it was rewritten since the fork")
    return notes


def _unclaimed(entries: list[Line], steps: list[Step], wanted: list[Expected]) -> list[str]:
    """Ledger calls the trace does not show: a step it does not have, or an agent's or a
    candidate's call where the trace has none."""
    shown = {(x.actor, x.split, x.step) for x in wanted}
    nodes = {(x.split, x.node) for x in wanted if x.by_node}
    actions = {0: "the starting workspace", **{s.index: s.action for s in steps}}
    problems = []
    for i, e in _calls_of(entries):
        if e.step is None and e.node is not None and e.split != "test" and \
                (e.split, e.node) not in nodes:
            problems.append(f"ledger line {i} records the {e.actor}'s call on {e.split} for pool "
                            f"node {e.node}, but the trace records no such node (a node in flight "
                            "when the run stopped is recorded, as lost, when it is resumed)")
        if e.step is None:
            continue
        if e.step not in actions:
            problems.append(f"ledger line {i} claims a call at step {e.step}, which the trace does "
                            f"not have (it has {plural(len(steps), 'step')})")
        elif (e.actor == "agent" or e.split != "test") and (e.actor, e.split, e.step) not in shown:
            what = actions[e.step]
            problems.append(f"ledger line {i} records the {e.actor}'s call on {e.split} at step "
                            f"{e.step}, but the trace shows no such call there (step {e.step}: {what})")
    return problems


# ---- the ledger's hashes against the task now ------------------------------------------------

def _short(h: str) -> str:
    return h[:12] or "nothing"


def _hash_problems(entries: list[Line], task: TaskSpec, sandbox: str) -> tuple[list[str], list[str]]:
    """(what changed in the task since the run, notes on sandbox images), from each line's hashes."""
    try:
        now: TaskHashes = task_hashes(task, sandbox)
    except Exception as err:  # noqa: BLE001 - an unreadable task folder is said, not raised
        return [f"the task's hashes cannot be taken now: {err}"], []
    problems: list[str] = []
    scorer_said = False
    data_said: set[str] = set()
    images: dict[str, int] = {}
    for i, e in entries:
        if e.scorer and e.scorer != now.scorer and not scorer_said:
            scorer_said = True
            problems.append(f"the scorer changed since the run: ledger line {i} pinned "
                            f"{_short(e.scorer)}, the task's {SCORER_FILES} now hash to "
                            f"{_short(now.scorer)} (edited or swapped after the run)")
        for split, h in e.data.items():
            if split in data_said or h == now.data.get(split):
                continue
            data_said.add(split)
            if split not in now.data:
                problems.append(f"the task no longer has the {split} split that ledger line {i} names")
                continue
            problems.append(f"the {split} split's data changed since the run: ledger line {i} "
                            f"pinned {_short(h)}, its files ({_files(task, split)}) now hash to "
                            f"{_short(now.data[split])} (swapped or re-made after the run)")
        if e.image:
            images.setdefault(e.image, i)
    return problems, _image_notes(images, sandbox)


def _files(task: TaskSpec, split: str) -> str:
    declared = task.splits.get(split)
    return ", ".join(f"scripts/{f}" for f in declared.data) if declared and declared.data else \
        "every file of scripts/ but the scorer's"


def _image_notes(images: dict[str, int], sandbox: str) -> list[str]:
    """A line scored in a sandbox image other than this machine's: worth saying, not a failure
    (the image is where the scorer ran, not what it scored against)."""
    notes = []
    for image, i in images.items():
        kind = image.split(":", 1)[0]
        here = image_identity(kind if kind in ("local", "docker") else sandbox)
        if here != image:
            notes.append(f"ledger line {i} was scored in {image}; here it would be {here}")
    return notes


# ---- per split ---------------------------------------------------------------------------------

def _splits(entries: list[Line], task: TaskSpec | None) -> list[SplitSummary]:
    names: list[str] = list(task.split_names) if task is not None else []
    for _, e in entries:  # the splits the run began with (its open line) and those called
        said = e.detail.get("splits", []) if e.event == "open" else [e.split]
        names += [n for n in said if isinstance(n, str) and n and n not in names]
    names.sort(key=lambda n: SPLITS.index(n) if n in SPLITS else len(SPLITS))
    out = []
    for name in names:
        declared = task.splits.get(name) if task is not None else None
        about = declared.about if declared is not None else TEST_ABOUT if name == "test" else ""
        mine = [e for _, e in _calls_of(entries) if e.split == name]
        out.append(SplitSummary(name=name, about=about,
                                agent=sum(e.actor == "agent" for e in mine),
                                harness=sum(e.actor == "harness" for e in mine),
                                shown_to_agent=sum(e.shown_to_agent or e.actor == "agent" for e in mine)))
    return out
