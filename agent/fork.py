"""Forking a run at step K: a new run that continues from the parent's step K.

The fork inherits the parent's first K steps (copied into its trace, marked ``inherited``) and
its workspace as step K's snapshot left it, so any actor (the parent's, another model, another
agent, a person in the TUI) continues the same prefix; :mod:`environments.reports.family` then
compares the continuations. Nothing is re-run: the prefix is the parent's record, which is
what makes continuations comparable (a re-run of a model would not reproduce it).

Budgets count the whole episode: the fork's totals start at what the prefix used
(``ForkOrigin.inherited``: its steps; its model calls' tokens, cost and seconds from the
parent's ``llm/calls.jsonl``; its actions' seconds), so a fork continued with the parent's
limits stops where the parent would have.

The Undo history is inherited as it stood right after step K: each file's stack holds the
versions pushed by steps <= K less those Undo popped at steps <= K (the parent's
``backups/log.jsonl`` records the step of each push and pop; :func:`environments.record.backups.inherit`
replays it up to K). So Undo Edit Script in the fork goes back exactly as far as it could have
in the parent right after step K; an edit after K is not on the fork's stack. The version files
are copied, read by descriptor (a symlink or FIFO among the parent's backups is never followed
nor waited on); the parent's ``backups/`` is never written. What was taken over, and why a file
was not, is in the fork's ``backups/inherited.json``: a run from before steps were recorded
(``backups/index.json`` only) gives no inherited history, and a file with an unreadable kept
version gives none for that file; Undo of those reaches only the fork's own edits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent.actor import Actor
from agent.config import ActorConfig, build
from agent.replay import with_kept_actions
from agent.runner import new_meta, resolve_budgets
from environments.imports.mlab import is_imported
from environments.record.backups import inherit
from environments.record.runs import Budgets, ForkOrigin, RunDir, Step, Totals
from environments.record.snapshots import SnapshotError
from environments.scoring.hidden import fork_ledger
from environments.task.sandboxing import Runtime, current_runtime, set_runtime
from environments.task.spec import TaskSpec

__all__ = ["ForkError", "fork_config", "fork_point", "fork_run", "prefix_totals"]

CALLS = ("llm", "calls.jsonl")  # agent/calllog.py's log, one line per model call with its step
#: the fields that say which actor acts; given any of them, a fork builds a new actor from
#: those alone (a provider's fast/edit models do not carry over to another provider's)
IDENTITY = ("kind", "model", "actions", "fast_model", "edit_model")


class ForkError(ValueError):
    """A fork that cannot be made (no such step, no snapshot, nothing to continue); nothing
    was written."""


def fork_point(parent: RunDir, at: int) -> list[Step]:
    """The parent's steps 1..``at`` after checking that a fork at ``at`` can continue."""
    steps = parent.steps(trim=False)
    name = parent.meta.run_id
    if not 0 <= at <= len(steps):
        raise ForkError(f"--at {at}: {name} has steps 0..{len(steps)} (0 = before the first step)")
    labels = set(parent.snapshots.labels())
    missing = [i for i in range(at + 1) if f"{i:05d}" not in labels]
    if missing:
        raise ForkError(f"{name} has no workspace snapshot for step {missing[0]} (snapshots: "
                        f"{len(labels)}), so its step {at} cannot be restored")
    if at and steps[at - 1].is_final_answer:
        raise ForkError(f"step {at} of {name} is its Final Answer: nothing can follow it; fork at "
                        f"step {at - 1} or earlier")
    return steps[:at]


def _calls(parent: RunDir) -> list[dict[str, Any]]:
    path = parent.path.joinpath(*CALLS)
    if not path.exists():
        return []
    calls = []
    for line in path.read_text().splitlines():
        try:
            calls.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line
    return calls


def prefix_totals(steps: list[Step], calls: Iterable[Mapping[str, Any]]) -> Totals:
    """What steps 1..K used: the model calls made for them (a call's ``step`` is the step it
    was made for) and the actions' own seconds. Wall time between steps is not recorded
    per step, so ``seconds`` is the sum of the parts (a lower bound of the parent's clock)."""
    at = len(steps)
    t = Totals(steps=at, seconds=sum(s.seconds for s in steps))
    for call in calls:
        step = call.get("step")
        if not isinstance(step, int) or not 1 <= step <= at:
            continue
        usage = call.get("usage") or {}
        t.llm_calls += 1
        t.retries += call.get("retries") or 0
        t.tokens_in += usage.get("input", 0)
        t.tokens_out += usage.get("output", 0)
        t.tokens_cached += usage.get("cached", 0)
        t.cost += call.get("cost") or 0.0
        t.seconds += call.get("seconds") or 0.0
    t.cost, t.seconds = round(t.cost, 6), round(t.seconds, 3)
    return t


def fork_config(parent: RunDir, given: Mapping[str, Any]) -> tuple[ActorConfig, Budgets]:
    """The fork's actor and budgets: the parent's, with the options ``given`` (name -> value,
    ``None`` = not given) laid over them as ``labcoat run --resume`` does.

    Naming an actor (``--agent``, ``--model``, ``--actions``, ``--fast-model``,
    ``--edit-model``) builds it from what was named only, keeping the parent's mode, context
    settings, observation cap and seed. A replay parent continued as it was replays its own
    kept actions file from step K+1; ``--actions FILE`` for a fork holds the continuation only
    (what follows step K), and the replay actor's own hook (``ReplayActor.on_created``, called
    by :func:`agent.session.fork`) keeps prefix + continuation as the fork's file.
    """
    parent_config = ActorConfig.from_meta(parent.meta)
    values = {k: v for k, v in given.items() if v is not None}
    if any(k in values for k in IDENTITY):
        parent_config = parent_config.model_copy(update=dict.fromkeys(IDENTITY))
    elif parent_config.kind == "human":
        raise ForkError(f"{parent.meta.run_id} was a person's run: name the actor that continues it "
                        "(--model or --agent), or fork it by hand in the TUI (Runs screen, k)")
    elif is_imported(parent.path):  # its actor was MLAgentBench's: none here can be it
        raise ForkError(f"{parent.meta.run_id} is MLAgentBench's run ({parent.meta.actor}), "
                        "imported: name the actor that continues it (--model or --agent)")
    else:
        parent_config = with_kept_actions(parent.path, parent_config)
    return build(values, parent_config, parent.meta.budgets)


def fork_run(parent: RunDir | Path, at: int, actor: Actor, runs_dir: Path | None = None, *,
             config: ActorConfig, budgets: Budgets | None = None,
             sandbox: str | None = None) -> tuple[RunDir, TaskSpec]:
    """A new run (nothing acts yet; ``drive`` it) continuing ``parent`` from step ``at``.

    ``runs_dir`` defaults to the parent's own folder (forks beside their parent);
    ``budgets`` to the parent's; ``sandbox`` to the parent's backend; the runtime (``--python``,
    ``--device``) to the parent's unless this process was given one (a fork is a new run: it
    may change them).
    """
    parent = parent if isinstance(parent, RunDir) else RunDir.open(parent)
    prefix = fork_point(parent, at)
    task = parent.task()
    if Path(task.root) != Path(parent.meta.task_root):
        raise ForkError(f"the task {parent.meta.task} prepared now ({task.root}) is not the copy "
                        f"{parent.meta.run_id} ran on ({parent.meta.task_root}): its files changed")
    if current_runtime() == Runtime():  # no --python/--device given: the parent's own
        set_runtime(parent.meta.runtime)
    meta = new_meta(task, parent.meta.task_source, actor, config, sandbox=sandbox or parent.meta.sandbox,
                    budgets=resolve_budgets(task, budgets or parent.meta.budgets), batch=None)
    inherited = prefix_totals(prefix, _calls(parent))
    meta.fork = ForkOrigin(parent=parent.meta.run_id, parent_dir=str(parent.path), step=at,
                           inherited=inherited)
    meta.totals = inherited.model_copy()
    try:
        run = RunDir.create_fork(Path(runs_dir) if runs_dir else parent.path.parent, meta, parent, prefix)
    except SnapshotError as err:
        raise ForkError(f"cannot fork {parent.meta.run_id} at step {at}: {err}") from err
    inherit(parent.backups_dir, run.backups_dir, at)
    _copy_calls(parent, run, at)
    fork_ledger(parent.path, run.path, task, run.meta.sandbox, at, parent.meta.run_id)
    return run, task


def _copy_calls(parent: RunDir, run: RunDir, at: int) -> None:
    """The prefix's model calls into the fork's log, marked ``inherited``, so the fork's log
    explains its totals."""
    lines = [json.dumps({**c, "inherited": True}) for c in _calls(parent)
             if isinstance(c.get("step"), int) and 1 <= c["step"] <= at]
    if lines:
        (run.log_dir(CALLS[0]) / CALLS[1]).write_text("\n".join(lines) + "\n")
