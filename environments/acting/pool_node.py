"""``Record Node``: the harness lays a finished pool node into the run's workspace, as a step.

The research pool (``--agent pool``, :mod:`agent.pool`) runs each candidate on a worker, in a
folder of its own under the run (``pool/nodes/<id>/workspace``), each in its own sandbox, and
scores it on the hidden ``search`` split there. When a node finishes, the pool's driver takes
this step: the handler replaces the run's workspace with the node's folder (copied by
descriptor, links dropped: the folder is what a sandbox left), so this step's snapshot *is*
the node: content-addressed, restorable by Restore Workspace, forkable with ``labcoat run
--fork RUN --node ID``. ``data`` holds the node's record (:class:`agent.pool.records.NodeRecord`)
and, for a node the harness scored, the ``split``, ``value`` and ``failure`` that
``labcoat verify`` matches to the worker's ledger line (which names the node, not a step).

Harness-only, like Score Candidate: an actor offers it through ``extra_actions`` (the pool does;
the ReAct agent does not, so a model cannot name it). A node that did not finish (a stop, a
worker lost) is recorded without its workspace (``lay=False``): the workspace stays as it was.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from pydantic import Field

from environments.acting.actions import (
    ActionArgs,
    ActionContext,
    ActionFailed,
    ActionSpec,
)
from environments.acting.observation import Observation
from sandbox.fs import WorkspaceFS, copy_tree

RECORD_NODE = "Record Node"
POOL_FOLDER = "pool"


def node_folder(run_path: Path, node: int) -> Path:
    """Where the pool's worker leaves node ``node``'s workspace."""
    return Path(run_path) / POOL_FOLDER / "nodes" / str(int(node)) / "workspace"


class RecordNodeArgs(ActionArgs):
    node: int = Field(ge=1, description="the node's id in the pool")
    record: dict[str, Any] = Field(default_factory=dict, description="the node's record")
    lay: bool = Field(True, description="make the workspace the node's (False: a node that did "
                      "not finish: recorded, the workspace left as it is)")


def _lay(ctx: ActionContext, folder: Path) -> int:
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise ActionFailed(f"the node's folder {folder.name} is not a folder")
    except FileNotFoundError:
        raise ActionFailed("the node's workspace folder is missing") from None
    ctx.guard.fs.clear()
    found = copy_tree(WorkspaceFS(folder), ctx.guard.fs)
    return len(found.files)


def _record(ctx: ActionContext, args: RecordNodeArgs) -> Observation:
    if ctx.run_folder is None:
        raise ActionFailed("only a recorded run keeps pool nodes")
    rec = args.record
    files = _lay(ctx, node_folder(ctx.run_folder, args.node)) if args.lay else None
    data: dict[str, Any] = {"node": args.node, "record": rec, "laid": args.lay}
    scored = rec.get("search") is not None or rec.get("failure") is not None
    if scored:
        data.update(split="search", value=rec.get("search"), failure=rec.get("failure"))
    status = rec.get("status", "ok")
    said = (f"search {ctx.task.metric} {rec['search']:.6g}" if rec.get("search") is not None
            else f"{status}: {str(rec.get('reason') or rec.get('failure') or '')[-300:]}")
    where = f"; the workspace is node {args.node}'s ({files} files)" if files is not None else ""
    parents = rec.get("parents") or []
    origin = ("the starting setting" if rec.get("operator") == "start" else
              f"{rec.get('operator', '?')} of " + (", ".join(f"node {p}" for p in parents) or "the start"))
    return ctx.observe(f"Node {args.node} ({origin}): {said}{where}.", data=data,
                       error=status != "ok")


RECORD_NODE_ACTION = ActionSpec(
    RECORD_NODE,
    "The harness records a finished pool node: its record, and its workspace as this step's.",
    RecordNodeArgs,
    _record,
    kind="harness",
)
