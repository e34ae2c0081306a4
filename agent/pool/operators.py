"""The baseline operators (no model): candidates made from the task's declared knobs, pure.

A task's ``[[hparams]]`` rows name its knobs and the values worth trying
(:func:`agent.baseline.declared_knob` reads each, the same reading the no-LLM baseline makes).
A node's *setting* is every knob's value. The operators, as in AIRA₂ / aira-dojo:

- ``start``: the task's starting setting, unchanged (so the pool is never worse on search
  than the starting script it was given);
- ``draft``: a random value for every knob;
- ``improve``: one knob of a parent moved to another of its values;
- ``crossover``: each knob from one of two parents;
- ``debug``: a failed node's parent again, with another value for the knob the failed node
  changed.

:func:`next_operation` chooses which (a fixed number of drafts first, then debugs of failed
nodes, crossovers and improvements of parents chosen by :mod:`agent.pool.selection`), never a
setting already tried or in flight; :func:`apply_setting` writes a setting into a folder.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.baseline import Knob, declared_knob, find_constants, find_keywords, set_value
from agent.pool.records import NodeRecord, Operator, Value
from agent.pool.selection import pick
from environments.task.spec import TaskSpec

CROSSOVER_PROB = 0.3
DEBUG_PROB = 0.3
TRIES = 40  # draws before a search that keeps drawing tried settings gives up


@dataclass
class Operation:
    """The next node: how it is made, from which nodes, and the setting it gets."""

    operator: Operator
    parents: list[int]
    setting: dict[str, Value]
    base: dict[str, Value]  # the setting of the folder it starts from (first parent, or start)
    of: int | None = None
    changes: dict[str, list[Value]] = field(default_factory=dict)


def knobs_of(task: TaskSpec, read: Callable[[str], str]) -> tuple[list[Knob], list[str]]:
    """The task's knobs (``read``: a starting workspace file's text) and why any was left out:
    its declared ``[[hparams]]``, else, as the no-LLM baseline finds them, the module-level
    numeric constants and hyperparameter keywords of its solve scripts (none on a timed task,
    whose numbers define what is timed)."""
    if not task.hparams:
        return _found_knobs(task, read)
    knobs, notes = [], []
    for h in task.hparams:
        try:
            source = read(h.file)
        except (OSError, ValueError) as err:
            notes.append(f"[[hparams]] {h.name}: cannot read {h.file} ({err})")
            continue
        knob = declared_knob(h, source)
        if isinstance(knob, str):
            notes.append(knob)
        else:
            knobs.append(knob)
    return knobs, notes


def _found_knobs(task: TaskSpec, read: Callable[[str], str]) -> tuple[list[Knob], list[str]]:
    if task.timed:
        return [], ["a timed task declares no [[hparams]]: its numbers define what is timed"]
    knobs: list[Knob] = []
    notes: list[str] = []
    for file in (f for f in task.solve if f.endswith(".py") and not task.is_read_only(f)):
        try:
            source = read(file)
            knobs += find_constants(source, file) + find_keywords(source, file)
        except (OSError, ValueError, SyntaxError) as err:
            notes.append(f"{file}: {type(err).__name__}")
    if not knobs:
        notes.append("no [[hparams]] in task.toml and no numeric constants or hyperparameter "
                     "keywords in its solve scripts: only the starting setting is run")
    return knobs, notes


def domain(knob: Knob) -> list[Value]:
    return [knob.value, *knob.candidates]


def start_setting(knobs: Sequence[Knob]) -> dict[str, Value]:
    return {k.name: k.value for k in knobs}


def key(setting: dict[str, Value]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in setting.items()))


def _changes(base: dict[str, Value], setting: dict[str, Value]) -> dict[str, list[Value]]:
    return {k: [base.get(k), v] for k, v in setting.items() if base.get(k) != v}


def _op(operator: Operator, parents: list[int], setting: dict[str, Value],
        base: dict[str, Value], of: int | None = None) -> Operation:
    return Operation(operator, parents, setting, base, of, _changes(base, setting))


def draft(knobs: Sequence[Knob], rng: random.Random) -> Operation:
    start = start_setting(knobs)
    return _op("draft", [], {k.name: rng.choice(domain(k)) for k in knobs}, start)


def improve(knobs: Sequence[Knob], parent: NodeRecord, rng: random.Random) -> Operation:
    knob = rng.choice(list(knobs))
    now = parent.setting.get(knob.name, knob.value)
    others = [v for v in domain(knob) if v != now] or [now]
    return _op("improve", [parent.id], {**parent.setting, knob.name: rng.choice(others)},
               parent.setting)


def _apart(knobs: Sequence[Knob], a: NodeRecord, b: NodeRecord) -> int:
    return sum(a.setting.get(k.name, k.value) != b.setting.get(k.name, k.value) for k in knobs)


def crossover(knobs: Sequence[Knob], a: NodeRecord, b: NodeRecord,
              rng: random.Random) -> Operation | None:
    """Each knob from one of the two parents, at least one from each where they differ (so
    the child is neither); None when they differ in fewer than two knobs (no such child)."""
    differ = [k.name for k in knobs if a.setting.get(k.name, k.value) != b.setting.get(k.name, k.value)]
    if len(differ) < 2:
        return None
    from_b = set(rng.sample(differ, rng.randint(1, len(differ) - 1)))
    setting = {k.name: (b if k.name in from_b else a).setting.get(k.name, k.value) for k in knobs}
    return _op("crossover", [a.id, b.id], setting, a.setting)


def debug(knobs: Sequence[Knob], failed: NodeRecord, parent: NodeRecord | None,
          rng: random.Random) -> Operation | None:
    """The failed node's parent with another value for one knob the failed node changed
    (None when it had no parent or changed nothing: nothing to retry)."""
    if parent is None or not failed.changes:
        return None
    by_name = {k.name: k for k in knobs}
    name = rng.choice(sorted(n for n in failed.changes if n in by_name) or [None])
    if name is None:
        return None
    avoid = {repr(failed.setting.get(name)), repr(parent.setting.get(name))}
    others = [v for v in domain(by_name[name]) if repr(v) not in avoid]
    if not others:
        return None
    return _op("debug", [parent.id], {**parent.setting, name: rng.choice(others)}, parent.setting,
               of=failed.id)


def next_operation(knobs: Sequence[Knob], nodes: Sequence[NodeRecord], pending: Sequence[Operation],
                   rng: random.Random, *, higher_is_better: bool, drafts: int = 3,
                   temperature: float = 1.0, greedy: bool = False) -> Operation | None:
    """The next node to run, given the finished ``nodes`` and those in flight (``pending``);
    None once every draw lands on a setting already tried (a small knob space is exhausted)."""
    tried = {key(n.setting) for n in nodes} | {key(p.setting) for p in pending}
    start = start_setting(knobs)
    if key(start) not in tried:
        return _op("start", [], start, start)
    made = [*((n.operator, n.of) for n in nodes), *((p.operator, p.of) for p in pending)]
    good = [n for n in nodes if n.scored]
    by_id = {n.id: n for n in nodes}
    debugged = {of for op, of in made if op == "debug"}
    to_debug = [n for n in nodes if n.status == "failed" and n.id not in debugged and n.parents]

    def parent() -> NodeRecord:
        return good[pick([n.search for n in good], higher_is_better, rng, temperature=temperature,
                         greedy=greedy)]

    for _ in range(TRIES):
        op: Operation | None = None
        if sum(o == "draft" for o, _ in made) < drafts or not good:
            op = draft(knobs, rng)
        elif to_debug and rng.random() < DEBUG_PROB:
            failed = to_debug[0]
            op = debug(knobs, failed, by_id.get(failed.parents[0]), rng)
            if op is None:
                debugged.add(failed.id)
                to_debug = to_debug[1:]
                continue
        elif len(good) >= 2 and rng.random() < CROSSOVER_PROB:
            a = parent()  # its mate: ranked among the nodes it can cross with (two knobs apart)
            mates = [n for n in good if _apart(knobs, a, n) >= 2]
            if mates:
                b = mates[pick([n.search for n in mates], higher_is_better, rng,
                               temperature=temperature, greedy=greedy)]
                op = crossover(knobs, a, b, rng)
        if op is None:
            op = improve(knobs, parent(), rng)
        if key(op.setting) not in tried:
            return op
    return untried(knobs, good, tried, higher_is_better)


def untried(knobs: Sequence[Knob], good: Sequence[NodeRecord], tried: set[tuple],
            higher_is_better: bool) -> Operation | None:
    """When the draws keep landing on tried settings (a small space nearly spent): the first
    untried one-knob change of the best nodes, else the first untried setting at all (None:
    every setting was tried)."""
    sign = -1 if higher_is_better else 1
    for parent in sorted(good, key=lambda n: (sign * n.search, n.id)):
        for k in knobs:
            for v in domain(k):
                setting = {**parent.setting, k.name: v}
                if key(setting) not in tried:
                    return _op("improve", [parent.id], setting, parent.setting)
    start = start_setting(knobs)
    for values in itertools.islice(itertools.product(*(domain(k) for k in knobs)), 100_000):
        setting = {k.name: v for k, v in zip(knobs, values)}
        if key(setting) not in tried:
            return _op("draft", [], setting, start)
    return None


def apply_setting(folder: Path, knobs: Sequence[Knob], base: dict[str, Value],
                  setting: dict[str, Value]) -> list[str]:
    """Write ``setting`` into the files under ``folder`` (which hold ``base``); the files changed.
    A knob's file is read and written as a path under ``folder``, never through a link."""
    from sandbox.fs import WorkspaceFS

    fs = WorkspaceFS(folder)
    by_file: dict[str, list[Knob]] = {}
    for k in knobs:
        if k.name in setting and setting[k.name] != base.get(k.name, k.value):
            by_file.setdefault(k.file, []).append(k)
    for file, ks in by_file.items():
        source = fs.read(file, 16 << 20)[0].decode()
        for k in ks:
            source = set_value(source, k, setting[k.name], base.get(k.name, k.value))
        fs.write(file, [source.encode()])
    return sorted(by_file)
