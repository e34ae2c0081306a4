"""The research pool's driver: one ordinary labcoat run whose nodes run on N workers at once.

The driver keeps ``workers`` nodes in flight and, whenever one finishes, records it and gives
the freed worker the next node at once (no generation barrier: AIRA₂'s asynchronous pool).
Each finished node is one ``Record Node`` step (:mod:`environments.acting.pool_node`), whose
snapshot is the node's workspace; its record (parents, operator, worker, times, CPU seconds,
search score) is the step's ``data``, so the trace is the population, a resume rebuilds it,
and ``labcoat report tree`` shows it. Nodes are scored by the harness on the hidden ``search``
split where they ran (:mod:`agent.pool.worker`); parents are drawn by rank on that score
(:mod:`agent.pool.selection`); the operators make candidates from the task's declared knobs
(:mod:`agent.pool.operators`), or, with a model, the model writes each node's script in a short
episode (:mod:`agent.pool_model`: its calls run on a background thread, polled with the
workers, so nodes are recorded and dispatched while it writes). At the end the best ``select_top_k`` nodes on search are scored
on ``select`` (Score Candidate), the best there is restored (Restore Workspace), and the Final
Answer names it; ``labcoat score`` then reads ``test`` once, as for any run.

Before each new node the driver asks whether it, the nodes in flight and the closing steps
still fit the run's budgets (steps, wall clock; tokens and cost with a model); when not, it waits for the nodes in flight
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
from typing import Any

from agent.actor import ActorError, BaseActor, Proposal, proposal
from agent.models import ModelError
from agent.pool.executors import PoolError, RayExecutor, ThreadExecutor, cores
from agent.pool.operators import Operation, knobs_of, next_operation
from agent.pool.records import NodeRecord, nodes_of, record_of
from agent.pool.settings import PoolSettings
from agent.pool.tool_op import tool_job
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
from environments.acting.tool_actions import tool_specs
from environments.record import ledger
from environments.record.runs import Step
from environments.task.sandboxing import current_runtime
from environments.untrusted.words import plural
from methods.toolspec import ToolSpec

NO_SEARCH = ("--agent pool scores every node on the task's hidden search split, and {task} "
             "declares none: add [splits.search] (and [splits.select]) to its task.toml, with "
             "get_search_score in scripts/eval.py (docs/hidden-evaluation.md)")
RETRIES = 1  # runs of a node after its worker died
MODEL_FAILURES = 3  # model calls failing in a row before the pool stops making nodes
SCORE_GUESS = 10.0  # seconds a select scoring is assumed to take before one is seen


def start_folder(run_path: Path) -> Path:
    return Path(run_path) / POOL_FOLDER / "start" / "workspace"


def job_file(run_path: Path, node: int) -> Path:
    return node_folder(run_path, node).parent / "job.json"


class PoolAgent(BaseActor):
    kind = "agent"
    config_kind = "pool"

    def __init__(self, settings: PoolSettings | None = None, *, select_top_k: int = 3,
                 seed: int = 0, ops: Any = None, tools: dict[str, ToolSpec] | None = None) -> None:
        """``ops``: the run's one model as :class:`agent.pool_model.ModelOperators` (the factory
        builds it), which writes every node's script (None: the no-LLM operators over the
        task's knobs); ``tools``: the method tools by name (default: the registry's, for the
        tools the task declares)."""
        self.settings = settings or PoolSettings()
        self.ops, self.tools = ops, tools
        self.model = ops.model if ops is not None else None
        self.calls: Any = None  # the ops' ModelCalls, once started
        self.episodes: dict[int, Any] = {}  # node -> its agent.pool_model.Episode
        self.known: dict[str, int] = {}  # script sha -> the node that ran it
        self.model_failures, self.fatal = 0, None
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
        self.script = next((s for s in task.solve if s.endswith(".py")),
                           task.solve[0] if task.solve else "train.py")
        if self.model is not None:
            self.notes = []  # the knobs' notes are the baseline operators'
            self.calls = self.ops.start(env.run)
            self.starting_code = (start / self.script).read_text() if (start / self.script).is_file() else ""
            if self.tools is None:
                self.tools = self.registry_tools(task.tools)
        elif task.tools:
            self.notes.append(f"no tool operator: the no-LLM operators write no script that could "
                              f"use what the task's method tools ({', '.join(task.tools)}) report "
                              "(run with --model for it)")
        for rec, step in nodes_of(history):
            self.nodes.append(rec)
            self.steps[rec.id] = step
            if rec.script_sha:
                self.known[rec.script_sha] = rec.id
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
        if self.fatal is not None:  # every node that ran is recorded: resume once it answers
            raise ActorError(f"the model stopped answering: {self.fatal}") from self.fatal
        yield from self.selecting(env)
        best = self.chosen()
        if best is not None and self.current != best.id and env.restorable(self.steps[best.id]):
            yield proposal(RestoreArgs(step=self.steps[best.id]), RESTORE_WORKSPACE.name,
                           pool={"node": best.id, "op": "restore"})
        yield proposal(FinalAnswerArgs(final_answer=self.summary(env, best)),
                       pool={"node": best.id if best else None, "op": "final"})

    def grow(self, env: Environment) -> Generator[Proposal, None, None]:
        """Keep ``workers`` nodes under way (a model writing one counts), record each as it
        finishes; with a model, its answers are polled as often as the workers."""
        stopping = False
        while True:
            while not stopping and not self.giving_up() and \
                    self.holding_workers() < self.settings.workers and self.may_start(env):
                if self.calls is None:
                    op = next_operation(self.knobs, self.nodes, list(self.pending.values()), self.rng,
                                        higher_is_better=env.task.higher_is_better,
                                        drafts=self.settings.drafts,
                                        temperature=self.settings.rank_temperature,
                                        greedy=self.settings.selection == "greedy")
                    if op is None:
                        stopping = True
                        break
                    self.dispatch(env, op)
                else:
                    yield from self.begin(env)
            if self.calls is not None:
                for ep, err in self.calls.ready():
                    yield from self.answered(env, ep, err)
            if not self.pending:
                return
            if self.executor is None or not self.executor.in_flight():
                for ep, err in self.calls.ready(timeout=1.0) if self.calls else ():
                    yield from self.answered(env, ep, err)
                continue
            done = self.executor.next_done(timeout=0.1 if self.calls and self.calls.busy() else 1.0)
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
            ep = self.episodes.get(job.node)
            if ep is not None:
                out = self.ran(env, ep, job, out)
                if out is None:  # the episode goes on: the model's next turn
                    continue
            self.pending.pop(job.node, None)
            self.costliest = max(self.costliest, out.wall_seconds + (ep.seconds if ep else 0.0))
            yield from self.record(out, lay=node_folder(self.run_path, out.id).is_dir() and
                                   (ep is None or bool(ep.code)))

    # --- model operators (agent.pool_model) ---------------------------------------------------

    def giving_up(self) -> bool:
        """The model is unreachable, or failed too often in a row: no new node is begun (those
        under way finish and are recorded)."""
        return self.fatal is not None or self.model_failures >= MODEL_FAILURES

    def registry_tools(self, names: Sequence[str]) -> dict[str, ToolSpec]:
        found, missing = tool_specs(names)
        self.notes += [f"no tool operator for {why}" for why in missing]
        return found

    def begin(self, env: Environment) -> Generator[Proposal, None, None]:
        """The next model node: its id is taken and its first model call asked for (the
        starting script needs no model: it is dispatched as it is)."""
        op, tool = self.ops.next(self.nodes, list(self.pending.values()), self.rng,
                                 higher_is_better=env.task.higher_is_better,
                                 drafts=self.settings.drafts,
                                 temperature=self.settings.rank_temperature,
                                 greedy=self.settings.selection == "greedy",
                                 tools=sorted(self.tools or {}))
        if op.operator == "start":
            self.dispatch(env, op)
            return
        node = self.next_id()
        self.pending[node] = op
        spec = self.tools[tool] if tool else None
        episode = self.ops.episode
        try:
            if spec is not None:
                ep = episode(node, op, "tool", self.ops.tool_messages(env.task, spec), tool=spec,
                             phase="args")
            else:
                ep = episode(node, op, op.operator, self.prompt(env, op))
        except (ModelError, ValueError, KeyError) as err:
            yield from self.answered(env, episode(node, op, op.operator, []), err)
            return
        self.episodes[node] = ep
        self.calls.submit(ep, self.known)

    def prompt(self, env: Environment, op: Operation, ep: Any = None) -> list[dict[str, str]]:
        return self.ops.messages(env.task, env.run.meta, op, self.nodes, self.code_of,
                                 script=self.script, starting_code=self.starting_code, ep=ep)

    def code_of(self, rec: NodeRecord) -> str:
        path = node_folder(self.run_path, rec.id) / self.script
        try:
            return path.read_text()
        except (OSError, UnicodeDecodeError):
            return ""

    def answered(self, env: Environment, ep: Any,
                 err: BaseException | None) -> Generator[Proposal, None, None]:
        """A model call ended: run what it wrote (or the tool it chose), or fail the node."""
        if err is None:
            self.model_failures = 0
            if ep.phase == "args":
                self.dispatch(env, ep.op, node=ep.node, tool=tool_job(ep.tool, ep.tool_args))
            else:
                self.known[ep.sha] = ep.node
                self.dispatch(env, ep.op, node=ep.node, code=ep.code)
            return
        if isinstance(err, ModelError) and err.unreachable:
            self.fatal = err
        elif not isinstance(err, ValueError):  # NoScript and bad tool arguments are the node's
            self.model_failures += 1
        self.pending.pop(ep.node, None)
        self.episodes.pop(ep.node, None)
        why = f"{type(err).__name__}: {err}" if not isinstance(err, ModelError) else str(err)
        if self.model_failures >= MODEL_FAILURES:
            self.notes.append(f"the model failed {MODEL_FAILURES} times in a row (last: "
                              f"{why[:200]}): the pool stopped making nodes")
        op = ep.op
        if ep.last is not None:  # a fix turn's call: the node is its last run, which failed
            rec = ep.last.model_copy(update={"reason": f"{ep.last.reason[:300]}; its fix turn's model "
                                                       f"call failed: {why}"[-600:]})
        else:
            rec = NodeRecord(id=ep.node, parents=op.parents, operator=op.operator, of=op.of,
                             status="failed", reason=f"its model call failed: {why}"[-600:])
        yield from self.record(ep.stamp(rec, self.script),
                               lay=ep.last is not None and node_folder(self.run_path, ep.node).is_dir())

    def ran(self, env: Environment, ep: Any, job: NodeJob, out: NodeRecord) -> NodeRecord | None:
        """A worker ran a model node's tool or script: the record to keep, or None when the
        episode goes on (the tool's report or a failed script goes back to the model)."""
        if job.tool is not None and out.status == "ok":
            ep.tool_report, ep.phase = out.tool_report, "script"
            ep.tool_args = out.tool_args or ep.tool_args
            try:
                ep.messages = self.prompt(env, ep.op, ep=ep)
            except (ModelError, ValueError, KeyError) as err:
                return ep.stamp(out.model_copy(update={"status": "failed", "reason": str(err)[-600:]}),
                                self.script)
            self.calls.submit(ep, self.known)
            return None
        if out.status == "failed" and out.error and ep.turns < self.settings.operator_turns and \
                self.fatal is None and self.may_fix(env):
            self.ops.fix(ep, out.error)
            ep.last = out
            self.calls.submit(ep, self.known)
            return None
        self.episodes.pop(ep.node, None)
        return ep.stamp(out, self.script)

    def may_fix(self, env: Environment) -> bool:
        """A fix turn is one more model call and run: only while the budgets have room."""
        return self.may_start(env, extra=0)

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

    def holding_workers(self) -> int:
        """Nodes under way that hold a worker: not those a scoring actor scores (with a device,
        agent.pool.scoring), so a freed GPU worker gets its next node at once."""
        return len(self.pending) - (self.executor.scoring_apart() if self.executor else 0)

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
        if self.ops is not None:
            self.ops.stop()
        ex, self.executor = self.executor, None
        if ex is not None:
            ex.stop()
            atexit.unregister(self.stop_workers)

    def dispatch(self, env: Environment, op: Operation, node: int | None = None,
                 code: str | None = None, tool: dict | None = None) -> None:
        """Send a node to a free worker (``node``: an id already taken, by a model episode;
        ``code``: the script the model wrote; ``tool``: run this tool, not the scripts)."""
        self._env = env
        self.ensure_executor(env)
        node = node if node is not None else self.next_id()
        parent = op.parents[0] if op.parents else None
        source = start_folder(self.run_path) if parent is None else node_folder(self.run_path, parent)
        if parent is not None and not source.is_dir():  # a folder removed since: from its snapshot
            env.run.restore(self.steps[parent], source)
        runtime = current_runtime()
        job = NodeJob(run_path=str(self.run_path), task=env.task, sandbox=env.sandbox_kind,
                      node=node, op=op, knobs=self.knobs, source=str(source),
                      seed=env.run.meta.seed, cpus=self.cpus, gpus=self.gpus,
                      runtime={"LABCOAT_PYTHON": runtime.python or "", "LABCOAT_DEVICE": runtime.device or ""},
                      code=code, script=self.script, tool=tool)
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

    def may_start(self, env: Environment, extra: int = 1) -> bool:
        """Whether ``extra`` more nodes, those in flight and the closing steps fit the budgets
        (with a model: its tokens and cost too, as much as the costliest node's for each node
        under way, since each may still take its fix turns)."""
        self._env = env
        meta = env.run.meta
        b = meta.budgets
        ahead = len(self.pending) + extra
        if b.max_steps is not None and \
                meta.totals.steps + ahead + self.closing_steps(ahead) > b.max_steps:
            return False
        if self.calls is not None and (b.max_tokens is not None or b.max_cost is not None):
            started = any(n.operator == "start" for n in [*self.nodes, *self.pending.values()])
            k = ahead if started else ahead - 1  # the starting script asks no model
            if not self.ops.room(meta, self.nodes, k):
                return False
        if b.max_time is not None:
            node = self.costliest or 0.0
            seen = self.score_seconds()  # a select scoring costs about a search one
            closing = self.closing_steps(len(self.pending) + 1) * (2 * seen + 1 if seen else SCORE_GUESS)
            if self.elapsed() + node * 1.2 * max(1, extra) + closing > b.max_time:
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

    @staticmethod
    def origin(node: NodeRecord) -> str:
        if node.script:
            return f"{node.script} written by the model in {plural(node.turns, 'turn')}"
        return "setting " + (", ".join(f"{k}={v!r}" for k, v in node.setting.items()) or "the start")

    def summary(self, env: Environment, best: NodeRecord | None) -> str:
        ops = {}
        for n in self.nodes:
            ops[n.operator] = ops.get(n.operator, 0) + 1
        counts = ", ".join(f"{v} {k}" for k, v in ops.items())
        failed = sum(n.status == "failed" for n in self.nodes)
        lost = sum(n.status == "lost" for n in self.nodes)
        head = (f"Research pool on {plural(self.settings.workers, 'worker')}: "
                f"{plural(len(self.nodes), 'node')} ({counts or 'none'}; {failed} failed, {lost} lost).")
        if self.model is not None:
            t = env.run.meta.totals
            fixed = sum(n.turns > 1 and n.scored for n in self.nodes)
            head += (f" {self.model.name} wrote the scripts ({plural(t.llm_calls, 'model call')}, "
                     f"{t.tokens_in + t.tokens_out} tokens; {plural(fixed, 'node')} fixed in a "
                     "later turn).")
        notes = (" " + "; ".join(self.notes) + ".") if self.notes else ""
        if best is None:
            return f"{head} No node scored on search, so the workspace is not a chosen node.{notes}"
        metric = env.task.metric
        text = (f"{head} The workspace is node {best.id} ({best.operator}"
                f"{' of ' + ', '.join(map(str, best.parents)) if best.parents else ''}; "
                f"{self.origin(best)}), "
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
