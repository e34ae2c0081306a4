"""The research pool's driver: one ordinary labcoat run whose nodes run on N workers at once.

The driver keeps ``workers`` nodes in flight and, whenever one finishes, records it and gives
the freed worker the next node at once (no generation barrier: AIRA₂'s asynchronous pool).
Each finished node is one ``Record Node`` step (:mod:`environments.acting.pool_node`), whose
snapshot is the node's workspace; its record (parents, operator, worker, times, CPU seconds,
search score) is the step's ``data``, so the trace is the population, a resume rebuilds it,
and ``labcoat report tree`` shows it. Nodes are scored by the harness on the hidden ``search``
split where they ran (:mod:`agent.pool.worker`); parents are drawn by rank on that score
(:mod:`agent.pool.selection`); the operators make candidates from the task's declared knobs
(:mod:`agent.pool.operators`). At the end the best ``select_top_k`` nodes on search are scored
on ``select`` (Score Candidate), the best there is restored (Restore Workspace), and the Final
Answer names it; ``labcoat score`` then reads ``test`` once, as for any run.

Before each new node the driver asks whether it, the nodes in flight and the closing steps
still fit the run's budgets (steps, wall clock); when not, it waits for the nodes in flight
and closes. A node whose worker dies is run again once (a node is idempotent: the same parent,
operator and setting). A node in flight when the driver stops (Ctrl-C, ``kill -9``) is lost:
its job file (``pool/nodes/<id>/job.json``) lets the next session record it as ``lost``, with
the search score the ledger holds for it, so ``labcoat verify`` still matches every line.
"""

from __future__ import annotations

import atexit
import json
import random
import time
from collections.abc import Generator, Sequence
from pathlib import Path

from agent.actor import ActorError, BaseActor, Proposal, proposal
from agent.pool.executors import PoolError, RayExecutor, ThreadExecutor, cores
from agent.pool.operators import Operation, knobs_of, next_operation
from agent.pool.records import NodeRecord, nodes_of, record_of
from agent.pool.settings import PoolSettings
from agent.pool.worker import NodeJob
from environments.acting.actions import ActionSpec
from environments.acting.candidates import (
    SCORE_CANDIDATE,
    SCORE_CANDIDATE_ACTION,
    ScoreCandidateArgs,
)
from environments.acting.environment import Environment
from environments.acting.low_level import (
    RESTORE_WORKSPACE,
    FinalAnswerArgs,
    RestoreArgs,
)
from environments.acting.observation import Observation
from environments.acting.pool_node import (
    POOL_FOLDER,
    RECORD_NODE,
    RECORD_NODE_ACTION,
    RecordNodeArgs,
    node_folder,
)
from environments.record import ledger
from environments.record.runs import Step
from environments.task.sandboxing import current_runtime
from environments.untrusted.words import plural

NO_SEARCH = ("--agent pool scores every node on the task's hidden search split, and {task} "
             "declares none: add [splits.search] (and [splits.select]) to its task.toml, with "
             "get_search_score in scripts/eval.py (docs/hidden-evaluation.md)")
RETRIES = 1  # runs of a node after its worker died
SCORE_GUESS = 10.0  # seconds a select scoring is assumed to take before one is seen


def start_folder(run_path: Path) -> Path:
    return Path(run_path) / POOL_FOLDER / "start" / "workspace"


def job_file(run_path: Path, node: int) -> Path:
    return node_folder(run_path, node).parent / "job.json"


class PoolAgent(BaseActor):
    kind = "agent"
    config_kind = "pool"

    def __init__(self, settings: PoolSettings | None = None, *, select_top_k: int = 3,
                 seed: int = 0) -> None:
        self.settings = settings or PoolSettings()
        self.select_top_k = select_top_k
        self.seed = seed
        self.nodes: list[NodeRecord] = []
        self.steps: dict[int, int] = {}  # node -> its Record Node step
        self.selected: dict[int, float] = {}
        self.current: int | None = None  # the node the workspace holds (None: the start or unknown)
        self.last: Observation | None = None
        self.executor: RayExecutor | ThreadExecutor | None = None
        self.pending: dict[int, Operation] = {}
        self.tries: dict[int, int] = {}
        self.notes: list[str] = []
        self.gen: Generator[Proposal, None, None] | None = None

    # --- the Actor protocol ---------------------------------------------------------------------

    def extra_actions(self) -> Sequence[ActionSpec]:
        return (RESTORE_WORKSPACE, SCORE_CANDIDATE_ACTION, RECORD_NODE_ACTION)

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        task = env.task
        if "search" not in task.splits:
            raise ActorError(NO_SEARCH.format(task=task.name))
        if env.run is None:
            raise ActorError("--agent pool needs a recorded run (its nodes are steps)")
        self.run_path = env.run.path
        start = start_folder(self.run_path)
        env.run.restore(0, start)  # the starting workspace, where drafts begin
        self.knobs, self.notes = knobs_of(task, lambda f: (start / f).read_text())
        for rec, step in nodes_of(history):
            self.nodes.append(rec)
            self.steps[rec.id] = step
        for s in history:
            data = s.data or {}
            if s.action == SCORE_CANDIDATE and data.get("split") == "select" and \
                    data.get("value") is not None and data.get("node") is not None:
                self.selected[int(data["node"])] = float(data["value"])
            tag = (s.meta or {}).get("pool") or {}
            if s.action == RECORD_NODE and data.get("laid") and record_of(s) is not None:
                self.current = int(data["node"])
            elif s.action == RESTORE_WORKSPACE.name and not s.error and tag.get("node") is not None:
                self.current = int(tag["node"])
            elif s.changed and s.action != RECORD_NODE:
                self.current = None
        self._env = env
        self.rng = random.Random((env.run.meta.seed * 1_000_003) + len(self.nodes))
        self.began, self.prior = time.monotonic(), env.run.meta.totals.seconds
        self.costliest = max((n.wall_seconds for n in self.nodes), default=0.0)
        self.gen = self.search(env)

    def propose(self, env: Environment) -> Proposal | None:
        return next(self.gen, None)

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        self.last = observation
        if proposal.action == RESTORE_WORKSPACE.name and not observation.error:
            self.current = proposal.meta.get("pool", {}).get("node")

    def closing(self, env: Environment) -> Proposal | None:
        """A budget stopped the run: end the workers, and restore the best node (free)."""
        self.stop_workers()
        best = self.chosen()
        if best is None or self.current == best.id or not env.restorable(self.steps[best.id]):
            return None
        return proposal(RestoreArgs(step=self.steps[best.id]), RESTORE_WORKSPACE.name,
                        pool={"node": best.id, "op": "restore"})

    # --- the search -----------------------------------------------------------------------------

    def search(self, env: Environment) -> Generator[Proposal, None, None]:
        yield from self.reconcile(env)
        try:
            yield from self.grow(env)
        except KeyboardInterrupt:
            self.stop_workers()
            self.pending.clear()
            yield from self.reconcile(env)  # the nodes in flight, recorded as lost
            raise
        finally:
            self.stop_workers()
        yield from self.selecting(env)
        best = self.chosen()
        if best is not None and self.current != best.id and env.restorable(self.steps[best.id]):
            yield proposal(RestoreArgs(step=self.steps[best.id]), RESTORE_WORKSPACE.name,
                           pool={"node": best.id, "op": "restore"})
        yield proposal(FinalAnswerArgs(final_answer=self.summary(env, best)),
                       pool={"node": best.id if best else None, "op": "final"})

    def grow(self, env: Environment) -> Generator[Proposal, None, None]:
        exhausted = False
        while True:
            while not exhausted and len(self.pending) < self.settings.workers and self.may_start(env):
                op = next_operation(self.knobs, self.nodes, list(self.pending.values()), self.rng,
                                    higher_is_better=env.task.higher_is_better,
                                    drafts=self.settings.drafts,
                                    temperature=self.settings.rank_temperature,
                                    greedy=self.settings.selection == "greedy")
                if op is None:
                    exhausted = True
                    break
                self.dispatch(env, op)
            if not self.pending:
                return
            done = self.executor.next_done(timeout=1.0)
            if done is None:
                continue
            job, out = done
            if isinstance(out, str):
                if self.tries.get(job.node, 0) < RETRIES:
                    self.tries[job.node] = self.tries.get(job.node, 0) + 1
                    self.executor.submit(job)  # the same node again: idempotent
                    continue
                out = NodeRecord(id=job.node, parents=job.op.parents, operator=job.op.operator,
                                 of=job.op.of, setting=job.op.setting, changes=job.op.changes,
                                 status="failed", reason=out)
            self.pending.pop(job.node, None)
            self.costliest = max(self.costliest, out.wall_seconds)
            yield from self.record(out, lay=node_folder(self.run_path, out.id).is_dir())

    def record(self, rec: NodeRecord, lay: bool) -> Generator[Proposal, None, None]:
        yield Proposal(action=RECORD_NODE,
                       args=RecordNodeArgs(node=rec.id, record=rec.model_dump(), lay=lay).model_dump(),
                       meta={"pool": {"node": rec.id, "parents": rec.parents, "op": rec.operator}})
        if self.last is not None and not (self.last.data or {}).get("record"):
            if lay:  # its folder could not be laid (the step says why): recorded without it
                self.current = None  # the workspace may be half laid: the closing restores
                yield from self.record(rec, lay=False)
            return
        self.nodes.append(rec)
        self.steps[rec.id] = self.run_steps()
        if lay:
            self.current = rec.id

    def run_steps(self) -> int:
        return self._env.step_count

    # --- workers --------------------------------------------------------------------------------

    def ensure_executor(self, env: Environment) -> None:
        if self.executor is not None:
            return
        n = self.settings.workers
        here = cores()
        share = max(1.0, here / n) if not self.settings.address else 1.0
        self.cpus = share
        device = current_runtime().device
        self.gpus = 1.0 / n if device and device.startswith("cuda") else 0.0
        if n > here and not self.settings.address:
            self.notes.append(f"{n} workers on a machine with {plural(here, 'core')}: they share "
                              "the cores (each worker's sandbox gets one thread)")
        try:
            if self.settings.pool_executor == "threads":
                self.executor = ThreadExecutor(n)
            else:
                ray_cpus = min(share, here / n) if not self.settings.address else 1.0
                self.executor = RayExecutor(n, self.settings.address, ray_cpus, self.gpus)
        except PoolError as err:
            raise ActorError(str(err)) from err
        atexit.register(self.stop_workers)

    def on_end(self) -> None:
        """However the run ended (a TUI stop included): the workers go with it."""
        self.stop_workers()

    def stop_workers(self) -> None:
        ex, self.executor = self.executor, None
        if ex is not None:
            ex.stop()
            atexit.unregister(self.stop_workers)

    def dispatch(self, env: Environment, op: Operation) -> None:
        self._env = env
        self.ensure_executor(env)
        node = self.next_id()
        parent = op.parents[0] if op.parents else None
        source = start_folder(self.run_path) if parent is None else node_folder(self.run_path, parent)
        if parent is not None and not source.is_dir():  # a folder removed since: from its snapshot
            env.run.restore(self.steps[parent], source)
        runtime = current_runtime()
        job = NodeJob(run_path=str(self.run_path), task=env.task, sandbox=env.sandbox_kind,
                      node=node, op=op, knobs=self.knobs, source=str(source),
                      seed=env.run.meta.seed, cpus=self.cpus, gpus=self.gpus,
                      runtime={"LABCOAT_PYTHON": runtime.python or "", "LABCOAT_DEVICE": runtime.device or ""})
        path = job_file(self.run_path, node)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"node": node, "operator": op.operator, "parents": op.parents,
                                    "of": op.of, "setting": op.setting, "changes": op.changes}))
        self.pending[node] = op
        self.executor.submit(job)

    def next_id(self) -> int:
        nodes = Path(self.run_path) / POOL_FOLDER / "nodes"
        made = [int(p.name) for p in nodes.iterdir() if p.name.isdigit()] if nodes.is_dir() else []
        return max([0, *made, *(n.id for n in self.nodes), *self.pending]) + 1

    # --- budgets --------------------------------------------------------------------------------

    def elapsed(self) -> float:
        return self.prior + time.monotonic() - self.began

    def closing_steps(self, more: int = 0) -> int:
        """Select scorings, the restore and the Final Answer, for the nodes there will be
        (``more``: those in flight and the one being considered, which may join the top)."""
        return min(self.select_top_k, max(1, len(self.nodes) + more)) + 2

    def may_start(self, env: Environment) -> bool:
        """Whether one more node, those in flight and the closing steps fit the budgets."""
        self._env = env
        meta = env.run.meta
        b = meta.budgets
        if b.max_steps is not None and \
                meta.totals.steps + len(self.pending) + 1 + self.closing_steps(
                    len(self.pending) + 1) > b.max_steps:
            return False
        if b.max_time is not None:
            node = self.costliest or 0.0
            seen = self.score_seconds()  # a select scoring costs about a search one
            closing = self.closing_steps(len(self.pending) + 1) * (2 * seen + 1 if seen else SCORE_GUESS)
            if self.elapsed() + node * 1.2 + closing > b.max_time:
                return False
        return True

    def score_seconds(self) -> float:
        return max((n.score_seconds for n in self.nodes), default=0.0)

    # --- lost nodes -----------------------------------------------------------------------------

    def reconcile(self, env: Environment) -> Generator[Proposal, None, None]:
        """Nodes a worker began but the driver never recorded (a stop, a ``kill -9``): each
        recorded as ``lost``, without its workspace, with the search score its ledger line
        holds (the harness did reveal it)."""
        self._env = env
        nodes = Path(self.run_path) / POOL_FOLDER / "nodes"
        if not nodes.is_dir():
            return
        known = {n.id for n in self.nodes} | set(self.pending)
        scored = {e.node: e for e in ledger.read(self.run_path)
                  if e.event == "call" and e.node is not None and e.step is None and e.split == "search"}
        for folder in sorted((p for p in nodes.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
            node = int(folder.name)
            if node in known:
                continue
            try:
                job = json.loads((folder / "job.json").read_text())
            except (OSError, ValueError):
                job = {}
            line = scored.get(node)
            shown = line.revealed if line is not None and line.revealed else None
            rec = NodeRecord(id=node, parents=job.get("parents") or [], operator=job.get("operator") or "draft",
                             of=job.get("of"), setting=job.get("setting") or {},
                             changes=job.get("changes") or {}, status="lost",
                             reason="its worker was stopped before the node was recorded",
                             search=shown.value if shown else None,
                             failure=(shown.failure if shown else None) or
                             ("lost" if line is not None and shown and shown.value is None else None))
            yield from self.record(rec, lay=False)

    # --- the end --------------------------------------------------------------------------------

    def top(self) -> list[NodeRecord]:
        good = [n for n in self.nodes if n.scored and n.id in self.steps]
        sign = -1 if self._env.task.higher_is_better else 1
        return sorted(good, key=lambda n: (sign * n.search, n.id))[: self.select_top_k]

    def selecting(self, env: Environment) -> Generator[Proposal, None, None]:
        self._env = env
        if "select" not in env.task.splits:
            return
        top = [n for n in self.top() if env.restorable(self.steps[n.id])]
        if len(top) < 2:
            return
        for n in top:
            if n.id in self.selected:
                continue
            yield proposal(ScoreCandidateArgs(split="select", step=self.steps[n.id], node=n.id),
                           SCORE_CANDIDATE, pool={"node": n.id, "op": "select"})
            if self.last is not None and not self.last.error and self.last.data.get("value") is not None:
                self.selected[n.id] = float(self.last.data["value"])

    def chosen(self) -> NodeRecord | None:
        """The best on select among the top on search (ties: the better on search); the best on
        search when none was scored on select."""
        top = self.top() if hasattr(self, "_env") else []
        if not top:
            return None
        picked = [n for n in top if n.id in self.selected]
        if not picked:
            return top[0]
        sign = -1 if self._env.task.higher_is_better else 1
        return min(picked, key=lambda n: (sign * self.selected[n.id], top.index(n)))

    def summary(self, env: Environment, best: NodeRecord | None) -> str:
        ops = {}
        for n in self.nodes:
            ops[n.operator] = ops.get(n.operator, 0) + 1
        counts = ", ".join(f"{v} {k}" for k, v in ops.items())
        failed = sum(n.status == "failed" for n in self.nodes)
        lost = sum(n.status == "lost" for n in self.nodes)
        head = (f"Research pool on {plural(self.settings.workers, 'worker')}: "
                f"{plural(len(self.nodes), 'node')} ({counts or 'none'}; {failed} failed, {lost} lost).")
        notes = (" " + "; ".join(self.notes) + ".") if self.notes else ""
        if best is None:
            return f"{head} No node scored on search, so the workspace is not a chosen node.{notes}"
        metric = env.task.metric
        text = (f"{head} The workspace is node {best.id} ({best.operator}"
                f"{' of ' + ', '.join(map(str, best.parents)) if best.parents else ''}; setting "
                f"{', '.join(f'{k}={v!r}' for k, v in best.setting.items()) or 'the start'}), "
                f"search {metric} {best.search:.6g}")
        if best.id in self.selected:
            text += f", select {self.selected[best.id]:.6g}"
            top = self.top()[0]
            if top.id != best.id:
                text += (f". Select chose it over node {top.id}, the best on search "
                         f"({top.search:.6g}, select {self.selected.get(top.id, float('nan')):.6g})")
            else:
                text += ". It was also the best on search"
        return text + "." + notes
