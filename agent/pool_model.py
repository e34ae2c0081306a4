"""The pool's operators with a model (``--agent pool --model M``): each node is a short episode
in which the model writes the node's whole solve script.

The driver owns the run's one model (so a local llama.cpp model is loaded once, in the driver,
and every worker's node is written by it) and calls it through the run's
:class:`~agent.calllog.Meter` (``llm/calls.jsonl``, tokens, cost and the budgets count every
call, with roles ``pool-draft``, ``pool-improve``, ``pool-crossover``, ``pool-debug``,
``pool-tool``, ``pool-tool-args``). The calls run on one background thread, one at a time
(:class:`ModelCalls`), so the driver keeps recording finished nodes and dispatching ready ones
while the model writes. The prompts are the tree agent's (:mod:`agent.tree.prompts`), with the
pool's records as the memory (:func:`journal_of`); a crossover shows both parents' scripts, the
tool operator (:mod:`agent.pool.tool_op`) the tool's JSON report.

This module sits beside :mod:`agent.pool` rather than in it: it reads the tree agent's prompts,
and :mod:`agent.tree.view` reads the pool's records, so the factory hands a
:class:`ModelOperators` to the pool's driver and :mod:`agent.pool` never imports
:mod:`agent.tree` (``lint-imports``: no circle between the agent's packages).

An episode is multi-turn: when a node's script fails (non-zero exit, timeout) and the episode
has turns left (``PoolSettings.operator_turns``), the failure's last output goes back to the
model in the same conversation and the same node runs again with the fixed script. A reply
with no script, or with a script the pool already ran (same sha256), is asked again like the
tree agent's format retries; a model that fails fails the node with the reason.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Literal

from agent.calllog import Meter
from agent.context import budget_line
from agent.models import Model
from agent.pool.operators import Operation
from agent.pool.records import NodeRecord
from agent.pool.selection import pick
from agent.pool.tool_op import schema_of, tool_args
from agent.tree import prompts
from agent.tree.nodes import Journal, Node
from agent.tree.outcome import Cost, fits
from environments.record.runs import RunDir, RunMeta
from environments.task.spec import TaskSpec
from methods.toolspec import ToolSpec

CROSSOVER_PROB = 0.3
DEBUG_PROB = 0.3
TOOL_PROB = 0.2  # a tool operator's chance once the task's tools were each tried
KIND = {"start": "draft", "draft": "draft", "tool": "draft", "improve": "improve",
        "crossover": "improve", "debug": "debug"}  # a pool operator as the tree's memory names it


def sha(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


@dataclass
class Episode:
    """One node's conversation with the model, and what it cost."""

    node: int
    op: Operation
    kind: str  # the prompt: draft | improve | debug | crossover | tool
    messages: list[dict[str, str]]
    tool: ToolSpec | None = None
    phase: Literal["args", "script"] = "script"
    turns: int = 0
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    plan: str = ""
    code: str = ""
    sha: str = ""
    tool_args: dict = field(default_factory=dict)
    tool_report: str = ""
    last: NodeRecord | None = None  # the last run's record, while a fix turn is asked for

    @property
    def role(self) -> str:
        return "pool-tool-args" if self.phase == "args" else f"pool-{self.kind}"

    def stamp(self, rec: NodeRecord, script: str) -> NodeRecord:
        """``rec`` with the episode's part: the script, its plan, turns, calls, tokens."""
        return rec.model_copy(update={
            "script": script if self.code else "", "script_sha": self.sha, "plan": self.plan,
            "turns": self.turns, "calls": self.calls, "tokens": self.tokens,
            "cost": round(self.cost, 6), "tool": self.tool.name if self.tool else rec.tool,
            "tool_args": self.tool_args or rec.tool_args,
            "tool_report": self.tool_report or rec.tool_report})


class NoScript(ValueError):
    """The model's replies held no script the pool had not run (format retries spent)."""


class ModelCalls:
    """The run's one model, called on one background thread: one call at a time (the Meter and
    a local model are used by one thread only), while the driver's loop goes on."""

    def __init__(self, model: Model, meter: Meter, format_retries: int = 2) -> None:
        self.model, self.meter, self.format_retries = model, meter, format_retries
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool-model")
        self.running: dict[Future, Episode] = {}

    def submit(self, ep: Episode, known: dict[str, int]) -> None:
        """Ask for ``ep``'s next reply; ``known``: script sha -> the node that ran it."""
        self.running[self.thread.submit(self._ask, ep, dict(known))] = ep

    def busy(self) -> bool:
        return bool(self.running)

    def ready(self, timeout: float = 0.0) -> list[tuple[Episode, BaseException | None]]:
        """The episodes whose call ended (with the error that ended it, if any)."""
        if not self.running:
            return []
        done, _ = wait(list(self.running), timeout=timeout, return_when=FIRST_COMPLETED)
        return [(self.running.pop(f), f.exception()) for f in done]

    def stop(self) -> None:
        self.thread.shutdown(wait=False, cancel_futures=True)  # a call under way ends on its own
        self.running.clear()

    def _call(self, ep: Episode) -> str:
        began = time.monotonic()
        try:
            reply = self.meter.call(self.model, ep.messages, role=ep.role)
        finally:
            ep.calls += 1
            ep.seconds += time.monotonic() - began
        ep.tokens += reply.usage.input + reply.usage.output
        ep.cost += reply.cost
        return reply.text

    def _ask(self, ep: Episode, known: dict[str, int]) -> None:
        if ep.phase == "args":
            text = self._call(ep)
            ep.tool_args, _ = tool_args(ep.tool, text)
            return
        ep.turns += 1
        for _ in range(self.format_retries + 1):
            text = self._call(ep)
            asked = [*ep.messages, {"role": "assistant", "content": text}]
            try:
                plan, code = prompts.parse_reply(text)
            except prompts.NoCode:
                ep.messages = [*asked, {"role": "user", "content": prompts.NO_CODE}]
                continue
            if sha(code) in known:
                ep.messages = [*asked, {"role": "user",
                                        "content": prompts.SAME_SCRIPT.format(id=known[sha(code)])}]
                continue
            ep.messages, ep.plan, ep.code, ep.sha = asked, plan, code, sha(code)
            return
        raise NoScript(f"the model gave {self.format_retries + 1} replies in a row without a "
                       "script the pool had not run")


def journal_of(nodes: Sequence[NodeRecord], code: Callable[[NodeRecord], str],
               higher_is_better: bool) -> Journal:
    """The pool's nodes as the tree's journal, so its memory and prompts read them: an
    operator the tree lacks is named as its nearest kind, with the real one in the plan."""
    out = []
    for n in nodes:
        kind = KIND[n.operator]
        tag = "" if kind == n.operator else f"[{n.operator}{' of ' + ', '.join(map(str, n.parents)) if n.parents else ''}] "
        out.append(Node(id=n.id, parent=n.parents[0] if n.parents else None, kind=kind,
                        code=code(n), plan=tag + (n.plan or ("the task's starting script"
                                                             if n.operator == "start" else "")),
                        metric=n.search if n.scored else None,
                        metric_source="search" if n.scored else None,
                        status="good" if n.scored else "buggy",
                        error=n.error or n.reason, output=n.output))
    return Journal(higher_is_better=higher_is_better, nodes=out)


def next_model_operation(nodes: Sequence[NodeRecord], pending: Sequence[Operation],
                         rng: random.Random, *, higher_is_better: bool, drafts: int,
                         temperature: float = 1.0, greedy: bool = False,
                         tools: Sequence[str] = ()) -> tuple[Operation, str | None]:
    """The next node and, for the tool operator, its tool: the starting script first (no
    model), ``drafts`` drafts, then debugs of failed nodes, each tool once and then now and
    then, crossovers of two parents and improvements, parents drawn by rank on search."""
    made = [*(n.operator for n in nodes), *(p.operator for p in pending)]
    if "start" not in made:
        return Operation("start", [], {}, {}), None
    good = [n for n in nodes if n.scored]
    if made.count("draft") < drafts or not good:
        return Operation("draft", [], {}, {}), None

    def parent(among: Sequence[NodeRecord]) -> NodeRecord:
        return among[pick([n.search for n in among], higher_is_better, rng,
                          temperature=temperature, greedy=greedy)]

    debugged = {n.of for n in nodes if n.operator == "debug"} | {p.of for p in pending if p.operator == "debug"}
    to_debug = [n for n in nodes if n.status == "failed" and n.script and n.id not in debugged]  # a
    # node the model wrote no script for (its call failed) has nothing to debug
    if to_debug and rng.random() < DEBUG_PROB:
        failed = to_debug[0]
        return Operation("debug", failed.parents[:1], {}, {}, of=failed.id), None
    used = made.count("tool")
    if tools and (used < len(tools) or rng.random() < TOOL_PROB):  # each tool once, then now and then
        return Operation("tool", [parent(good).id], {}, {}), tools[used % len(tools)]
    if len(good) >= 2 and rng.random() < CROSSOVER_PROB:
        a = parent(good)
        b = parent([n for n in good if n.id != a.id])
        return Operation("crossover", [a.id, b.id], {}, {}), None
    return Operation("improve", [parent(good).id], {}, {}), None


def node_cost(nodes: Sequence[NodeRecord], calls_seen: int, tokens_seen: int,
              cost_seen: float) -> Cost:
    """What one more model node may spend: the costliest node so far; before any finished, a
    call's average so far (nothing before the first call, as the tree agent's first node)."""
    done = [n for n in nodes if n.calls]
    if done:
        return Cost(tokens=max(n.tokens for n in done), cost=max(n.cost for n in done))
    if calls_seen:
        return Cost(tokens=tokens_seen // calls_seen, cost=cost_seen / calls_seen)
    return Cost()


def fitting(model: Model, build: Callable[[int, bool], list[dict[str, str]]],
            with_parent: bool) -> list[dict[str, str]]:
    """The richest prompt of :data:`prompts.SHRINK` that fits a model with a small window
    (``context_window`` and ``count_tokens``: the local llama.cpp one), as the tree agent does."""
    window = getattr(model, "context_window", None)
    if not window:
        return build(*prompts.SHRINK[0])
    messages: list[dict[str, str]] = []
    for option in (s for s in prompts.SHRINK if s[1] or with_parent):
        messages = build(*option)
        if model.count_tokens(messages) <= window:
            return messages
    return messages


class ModelOperators:
    """What the pool's driver (:class:`agent.pool.agent.PoolAgent`) asks of its one model: the
    next operation, each episode's prompts, the calls (:class:`ModelCalls`), and whether the
    budgets have room for more model nodes."""

    episode = Episode  # what the driver makes of each model node

    def __init__(self, model: Model, format_retries: int = 2) -> None:
        self.model, self.format_retries = model, format_retries
        self.calls: ModelCalls | None = None

    def start(self, run: RunDir | None) -> ModelCalls:
        self.calls = ModelCalls(self.model, Meter(run), self.format_retries)
        return self.calls

    def stop(self) -> None:
        if self.calls is not None:
            self.calls.stop()

    def next(self, nodes: Sequence[NodeRecord], pending: Sequence[Operation], rng: random.Random,
             **how) -> tuple[Operation, str | None]:
        return next_model_operation(nodes, pending, rng, **how)

    def tool_messages(self, task: TaskSpec, spec: ToolSpec) -> list[dict[str, str]]:
        """The short call that picks a tool's arguments."""
        return [{"role": "system", "content": prompts.SYSTEM.format(problem=task.research_problem.strip())},
                {"role": "user", "content": prompts.TOOL_ARGS.format(
                    tool=spec.name, description=spec.description, schema=schema_of(spec))}]

    def messages(self, task: TaskSpec, meta: RunMeta | None, op: Operation,
                 nodes: Sequence[NodeRecord], code: Callable[[NodeRecord], str], *, script: str,
                 starting_code: str, ep: Episode | None = None) -> list[dict[str, str]]:
        """The tree agent's prompt for ``op`` (``ep``: a tool episode whose report came back),
        the pool's records as its memory, fitted to the model's window."""
        journal = journal_of(nodes, code, task.higher_is_better)
        kind = "tool" if ep is not None else op.operator
        focus = op.of if op.operator == "debug" else (op.parents[0] if op.parents else None)
        parent = journal.get(focus) if focus is not None else None
        mate = journal.get(op.parents[1]) if op.operator == "crossover" else None

        def build(memory_limit: int, with_start: bool) -> list[dict[str, str]]:
            return prompts.build_messages(
                kind=kind, problem=task.research_problem, script=script,
                starting_code=starting_code, journal=journal, parent=parent, metric=task.metric,
                higher_is_better=task.higher_is_better, timeout=task.limits.exec_timeout,
                budget=budget_line(meta), memory_limit=memory_limit, with_start=with_start,
                mate=mate, tool=ep.tool.name if ep else "", report=ep.tool_report if ep else "",
                tool_args=json.dumps(ep.tool_args) if ep else "")

        return fitting(self.model, build, parent is not None)

    @staticmethod
    def fix(ep: Episode, error: str) -> None:
        """The failed run's output, as the episode's next user turn."""
        ep.messages = [*ep.messages, {"role": "user", "content": prompts.FIX.format(error=error)}]

    @staticmethod
    def room(meta: RunMeta, nodes: Sequence[NodeRecord], k: int) -> bool:
        """Whether ``k`` more model nodes, each as costly as the costliest so far, fit the
        run's token and cost budgets (with the closing Final Answer's step)."""
        t = meta.totals
        one = node_cost(nodes, t.llm_calls, t.tokens_in + t.tokens_out, t.cost)
        return fits(meta, Cost(tokens=one.tokens * k, cost=one.cost * k), Cost(steps=1))

