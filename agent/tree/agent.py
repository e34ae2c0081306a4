"""The solution-tree actor: AIDE's search over complete solve scripts, as ordinary steps.

Each node is one model call that writes a whole solve script (a draft, an improvement of the
best node, or a debug of a failing one; :mod:`agent.tree.policy` picks which), then the normal
actions: Write File (the script), Execute Script, and Validate Submission where the task offers
it and budget is left. Every one of those steps carries ``meta["tree"] = {"node", "parent",
"op"}``, so the trace is the tree (the TUI and reports need nothing else) and a resume rebuilds
it. Before each node the agent asks the runner's budgets (:func:`agent.tree.outcome.fits`)
whether the node and the closing steps still fit; when not, it makes the workspace the best
node's again and gives its Final Answer. The closing is Restore Workspace to the step that ran
the best node (its script and the outputs that run wrote, from the run's snapshot: nothing runs
again); only when that snapshot was not stored does it write the script back and re-run it. A
node that alone overruns a budget is cut short by the runner, which then takes the agent's
:meth:`TreeAgent.closing` step: the same free restore, so the run still ends with the best node.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

from agent.actor import ActorError, BaseActor, Proposal, proposal
from agent.calllog import Meter
from agent.context import budget_line
from agent.models import Model, ModelError
from agent.tree import prompts
from agent.tree.nodes import Journal, Node
from agent.tree.outcome import Cost, fits, settle, used
from agent.tree.policy import GreedyPolicy, Operation
from agent.tree.settings import TreeSettings
from environments.acting.actions import ActionSpec
from environments.acting.candidates import (
    SCORE_CANDIDATE,
    SCORE_CANDIDATE_ACTION,
    ScoreCandidateArgs,
)
from environments.acting.environment import Environment
from environments.acting.low_level import (
    EXECUTE_SCRIPT,
    RESTORE_WORKSPACE,
    WRITE_FILE,
    ExecuteArgs,
    FinalAnswerArgs,
    RestoreArgs,
    WriteFileArgs,
)
from environments.acting.observation import Observation
from environments.acting.validation import VALIDATE, validations_used
from environments.record.runs import Step
from environments.untrusted.words import plural

WRITE, EXECUTE = WRITE_FILE, EXECUTE_SCRIPT  # Write File shares its model with Append File
RESTORE = RESTORE_WORKSPACE.name
STARTING = 0  # the node id ``current`` takes while the workspace holds the starting script


class TreeAgent(BaseActor):
    kind = "agent"
    config_kind = "tree"  # what a run created without a config is recorded as (runner._kind_of)

    def __init__(self, model: Model, settings: TreeSettings | None = None, *,
                 format_retries: int = 2) -> None:
        self.model = model
        self.settings = settings or TreeSettings()
        self.format_retries = format_retries  # re-asks of a reply with no script in it
        self.journal = Journal()
        self.meter = Meter(None)
        self.last: Observation | None = None
        self.current: int | None = STARTING  # which node's script the workspace holds (None: unknown)
        self.costliest = Cost()
        self.gen: Generator[Proposal, None, None] | None = None

    # --- the Actor protocol ---------------------------------------------------------------------

    def extra_actions(self) -> Sequence[ActionSpec]:
        return (RESTORE_WORKSPACE, SCORE_CANDIDATE_ACTION)

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        task = env.task
        self.meter = Meter(env.run)
        self.script = next((s for s in task.solve if s.endswith(".py")), task.solve[0] if task.solve
                           else "train.py")
        self.starting_code = (task.env_dir / self.script).read_text() if (
            task.env_dir / self.script).is_file() else ""
        self.journal = Journal(higher_is_better=task.higher_is_better)
        if history:
            self.journal, self.current = rebuild(history, self.journal, task.metric)
        # the run's seed fixes the policy's draws; a resumed search draws on from a seed moved
        # by the nodes it already has, so it does not repeat the first session's draws
        seed = (env.run.meta.seed if env.run else 0) * 1_000_003 + len(self.journal.nodes)
        self.policy = GreedyPolicy(self.settings.policy, seed=seed)
        self.gen = self.search(env)

    def propose(self, env: Environment) -> Proposal | None:
        return next(self.gen, None)  # the search always ends with its Final Answer

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        """Also follows which node's script the workspace holds, here rather than in the search:
        the runner may stop the run right after a step, and the closing step must then see the
        workspace as that step left it (the same reading :func:`rebuild` makes of the trace)."""
        self.last = observation
        tag = proposal.meta.get("tree")
        if isinstance(tag, dict) and proposal.action in (WRITE, RESTORE) and not observation.error:
            self.current = int(tag["node"])

    # --- the search, as a generator of proposals (each sees self.last afterwards) ---------------

    def search(self, env: Environment) -> Generator[Proposal, None, None]:
        while True:
            op = self.policy.next(self.journal)
            if env.run is not None and not fits(env.run.meta, self.node_estimate(env),
                                                self.closing_cost(env)):
                break
            yield from self.grow(env, op)
        yield from self.finish(env)

    def scoring_on(self, env: Environment, split: str) -> bool:
        """Whether the harness scores nodes on the task's hidden ``split`` (no budget)."""
        return (not self.settings.skip_validation and split in env.task.splits
                and SCORE_CANDIDATE in env.actions)

    def validating(self, env: Environment) -> bool:
        return (not self.settings.skip_validation and not self.scoring_on(env, "search")
                and VALIDATE in env.actions and validations_used(env) < env.task.validation_budget)

    def node_estimate(self, env: Environment) -> Cost:
        """The costliest node so far (before the first: its steps only, nothing else known)."""
        scored = self.scoring_on(env, "search") or self.validating(env)
        return self.costliest.most(Cost(steps=3 if scored else 2))

    def select_cost(self, env: Environment) -> Cost:
        """Scoring the final candidates on select, at most: one step each, as long as the
        costliest node (whose steps include a scoring)."""
        if not self.scoring_on(env, "select"):
            return Cost()
        k = self.settings.select_top_k
        return Cost(steps=k, seconds=k * self.costliest.seconds)

    def closing_cost(self, env: Environment) -> Cost:
        """The closing steps after one more node, at their worst: that node's script is then in
        the workspace, and unless it turns out the best, the best one (or, with none, the
        starting script) is restored before the Final Answer: two free steps, or, when its
        snapshot was not stored, three with a re-run as long as its first. Counting only what
        today's workspace would need let a node that did not beat the best push the restore
        past the budget."""
        best = self.journal.best()
        if env.restorable(self.best_step(best)):
            return Cost(steps=2) + self.select_cost(env)
        return (Cost(steps=3, seconds=best.seconds if best is not None else self.costliest.seconds)
                + self.select_cost(env))

    @staticmethod
    def best_step(best: Node | None) -> int:
        """The step whose workspace the run should end with: the best node's run, or the start."""
        return best.step if best is not None and best.step is not None else 0

    def grow(self, env: Environment, op: Operation) -> Generator[Proposal, None, None]:
        before = used(env.run.meta) if env.run else Cost()
        parent = self.journal.get(op.parent) if op.parent is not None else None
        plan, code = self.ask(env, op, parent)
        node = self.journal.add(Node(id=self.journal.next_id(), parent=op.parent, kind=op.kind,
                                     code=code, plan=plan))
        tag = {"node": node.id, "parent": node.parent, "op": node.kind}
        yield proposal(WriteFileArgs(file_name=self.script, content=code), WRITE, tree=tag, plan=plan)
        failed, output, validation = self.last.error, self.last.full_text or self.last.text, None
        source = "validation"
        if not failed:
            yield proposal(ExecuteArgs(script_name=self.script), tree=tag)
            failed, output = self.last.error, self.last.full_text or self.last.text
            seconds = round(self.last.seconds, 4)  # as the trace keeps it, so a resume agrees
            ran = env.step_count
            if not failed and self.scoring_on(env, "search"):
                yield Proposal(action=SCORE_CANDIDATE, args={"split": "search", "node": node.id},
                               meta={"tree": tag})
                validation, source = self.last.data, "search"
            elif not failed and self.validating(env):
                yield Proposal(action=VALIDATE, args={}, meta={"tree": tag})
                validation, source = self.last.data, "validation"
        else:
            seconds, ran = 0.0, None
        settled = settle(node, failed=failed, output=output, metric_name=env.task.metric,
                         validation=validation, source=source).model_copy(
                             update={"seconds": seconds, "step": ran})
        self.journal.nodes[-1] = settled
        if env.run is not None:
            after = used(env.run.meta)  # the runner has saved the node's last step by now
            spent = Cost(steps=after.steps - before.steps, tokens=after.tokens - before.tokens,
                         cost=after.cost - before.cost, seconds=after.seconds - before.seconds)
            self.costliest = self.costliest.most(spent)

    def ask(self, env: Environment, op: Operation, parent: Node | None) -> tuple[str, str]:
        """One model call for the node's script (re-asked only when a reply holds no script)."""
        messages = self.messages(env, op, parent)
        for _ in range(self.format_retries + 1):
            try:
                reply = self.meter.call(self.model, messages, role=f"tree-{op.kind}")
            except ModelError as err:
                raise ActorError(str(err)) from err
            try:
                return prompts.parse_reply(reply.text)
            except prompts.NoCode:
                messages = [*messages, {"role": "assistant", "content": reply.text},
                            {"role": "user", "content": prompts.NO_CODE}]
        raise ActorError(f"the model gave {self.format_retries + 1} replies without a "
                         "script in a row")

    def messages(self, env: Environment, op: Operation, parent: Node | None) -> list[dict[str, str]]:
        """The node's prompt; for a model with a small window (``context_window`` and
        ``count_tokens``: the local llama.cpp one) the richest of :data:`prompts.SHRINK` that
        fits, so the parts cut are whole (old memory lines) rather than the middle of a script."""
        def build(memory_limit: int, with_start: bool) -> list[dict[str, str]]:
            return prompts.build_messages(
                kind=op.kind, problem=env.task.research_problem, script=self.script,
                starting_code=self.starting_code, journal=self.journal, parent=parent,
                metric=env.task.metric, higher_is_better=env.task.higher_is_better,
                timeout=env.task.limits.exec_timeout,
                budget=budget_line(env.run.meta if env.run else None),
                memory_limit=memory_limit, with_start=with_start)

        window = getattr(self.model, "context_window", None)
        if not window:
            return build(*prompts.SHRINK[0])
        shrink = [s for s in prompts.SHRINK if s[1] or parent is not None]
        try:
            for option in shrink:
                messages = build(*option)
                if self.model.count_tokens(messages) <= window:
                    return messages
        except ModelError as err:  # the tokenizer is the model's: loading it can fail
            raise ActorError(str(err)) from err
        return messages  # the smallest; the model cuts what still does not fit

    def closing(self, env: Environment) -> Proposal | None:
        """The step the runner ends a budget-stopped run with: Restore Workspace to the best
        node's run when the workspace holds another node's (free: no command, no model)."""
        return self.restoring(env, self.journal.chosen())

    def restoring(self, env: Environment, best: Node | None) -> Proposal | None:
        """Restore Workspace to the best node's run (or the start), if the workspace holds
        anything else and that snapshot can be restored."""
        target = best.id if best is not None else STARTING
        step = self.best_step(best)
        if self.current == target or not env.restorable(step):
            return None
        return proposal(RestoreArgs(step=step), RESTORE, tree={"node": target, "parent": None, "op": "restore"})

    def selecting(self, env: Environment) -> Generator[Proposal, None, None]:
        """Score the best nodes on search (``select_top_k`` of them, whose runs can be restored)
        on the hidden select split, each once: the final pick is made there
        (:meth:`Journal.chosen`), never on the signal the search climbed."""
        if not self.scoring_on(env, "select"):
            return
        top = [n for n in self.journal.top(self.settings.select_top_k)
               if n.step is not None and env.restorable(n.step)]
        if len(top) < 2:
            return  # one candidate: a select score could not change the pick
        for node in top:
            if node.select is not None:
                continue
            yield proposal(ScoreCandidateArgs(split="select", step=node.step, node=node.id),
                           SCORE_CANDIDATE, tree={"node": node.id, "parent": None, "op": "select"})
            if not self.last.error and self.last.data.get("value") is not None:
                i = self.journal.nodes.index(node)
                self.journal.nodes[i] = node.model_copy(update={"select": float(self.last.data["value"])})

    def finish(self, env: Environment) -> Generator[Proposal, None, None]:
        yield from self.selecting(env)
        best = self.journal.chosen()
        target = best.id if best is not None else STARTING
        restore = self.restoring(env, best)
        if restore is not None:
            yield restore
        if self.current != target:  # nothing to restore from: write the script back, run it again
            code = best.code if best is not None else self.starting_code
            tag = {"node": target, "parent": None, "op": "restore"}
            yield proposal(WriteFileArgs(file_name=self.script, content=code), WRITE, tree=tag)
            yield proposal(ExecuteArgs(script_name=self.script), tree=tag)
        yield proposal(FinalAnswerArgs(final_answer=self.summary(env, best)),
                       tree={"node": target, "parent": None, "op": "final"})

    def summary(self, env: Environment, best: Node | None) -> str:
        j = self.journal
        counts = (f"{plural(len(j.nodes), 'node')} ({plural(len(j.drafts), 'draft')}, "
                  f"{plural(sum(n.kind == 'improve' for n in j.nodes), 'improvement')}, "
                  f"{plural(sum(n.kind == 'debug' for n in j.nodes), 'debug')}; {len(j.buggy)} failed)")
        if best is None:
            return (f"Solution tree: {counts}; none ran and reported a validation "
                    f"{env.task.metric}, so {self.script} is the starting script.")
        picked = ""
        if best.select is not None:
            top = self.journal.best()
            picked = (f" Picked on the hidden select split ({best.select:.6g}) among the "
                      f"{plural(sum(n.select is not None for n in j.nodes), 'best node')} on search"
                      + (f"; node {top.id} was best on search" if top is not None and top.id != best.id
                         else "") + ".")
        return (f"Solution tree: {counts}. {self.script} is node {best.id} ({best.kind}), "
                f"{best.metric_source if best.metric_source == 'search' else 'validation'} "
                f"{env.task.metric} {best.metric:.6g} (from its {best.metric_source}).{picked} "
                f"Its plan: {' '.join(best.plan.split())[:600]}")


def rebuild(history: Sequence[Step], journal: Journal, metric: str) -> tuple[Journal, int | None]:
    """The journal a trace records, and which node's script the workspace holds.

    A node whose run was never recorded (the host stopped between its write and its run) is
    dropped; the workspace then holds its script, so ``current`` is None and the closing steps
    restore the best node whatever it is.
    """
    groups: dict[int, list[Step]] = {}
    selected: dict[int, float] = {}
    current: int | None = STARTING
    for s in history:
        tag = (s.meta or {}).get("tree")
        if not isinstance(tag, dict):
            if s.changed:
                current = None  # something else edited the workspace
            continue
        if tag.get("op") == "select" and s.action == SCORE_CANDIDATE and not s.error:
            value = (s.data or {}).get("value")
            if value is not None:
                selected[int(tag["node"])] = float(value)
        if tag.get("op") in ("draft", "improve", "debug"):
            groups.setdefault(int(tag["node"]), []).append(s)
        if s.action == WRITE or (s.action == RESTORE and not s.error):
            current = int(tag["node"])
    journal.reserved = max(groups, default=0)
    for node_id, steps in sorted(groups.items()):
        write = next((s for s in steps if s.action == WRITE), None)
        run = next((s for s in steps if s.action == EXECUTE), None)
        if write is None or (run is None and not write.error):
            current = None if current == node_id else current
            continue
        tag = write.meta["tree"]
        node = Node(id=node_id, parent=tag.get("parent"), kind=tag["op"],
                    code=(write.args or {}).get("content", "") if isinstance(write.args, dict) else "",
                    plan=write.meta.get("plan", ""))
        last = run or write
        check = next((s for s in steps if s.action in (SCORE_CANDIDATE, VALIDATE)), None)
        journal.add(settle(node, failed=last.error, output=last.observation_full or last.observation,
                           metric_name=metric, validation=check.data if check else None,
                           source="search" if check and check.action == SCORE_CANDIDATE
                           else "validation")
                    .model_copy(update={"seconds": run.seconds if run else 0.0,
                                        "step": run.index if run else None}))
    for node_id, value in selected.items():
        if any(n.id == node_id for n in journal.nodes):
            i = next(i for i, n in enumerate(journal.nodes) if n.id == node_id)
            journal.nodes[i] = journal.nodes[i].model_copy(update={"select": value})
    return journal, current
