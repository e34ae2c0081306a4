"""The replay actor: performs a JSONL list of ``{"action": NAME, "args": {...}}`` in order.

Used for demos, for tests, and to reproduce a run's actions exactly. On resume it skips the
actions the trace already holds.

Its file keeping is its own: a replay run keeps a copy of its actions file (``actions.jsonl``
in the run directory, :meth:`ReplayActor.on_created`, which :mod:`agent.session` calls for any
actor that has it), and a resumed or continued replay reads that copy
(:func:`with_kept_actions`), so no other module asks whether an actor is a replay.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.actor import BaseActor, Proposal
from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment
from environments.acting.observation import Observation
from environments.record.runs import RunDir, Step

if TYPE_CHECKING:
    from agent.config import ActorConfig

ACTIONS_FILE = "actions.jsonl"  # the run's own copy, so --resume needs no --actions
KIND = "replay"
MODEL_PREFIX = "replay/"  # a batch's model string ``replay/FILE`` replays FILE


class ReplayError(ValueError):
    pass


def kept_actions(run_path: Path) -> Path | None:
    """The actions file a replay run kept, if it is one."""
    path = Path(run_path) / ACTIONS_FILE
    return path if path.is_file() else None


def with_kept_actions(run_path: Path, config: ActorConfig) -> ActorConfig:
    """``config`` reading the run's kept actions file, when it is a replay's and the run kept
    one (resuming the run, or forking it to continue its own actions); else ``config``."""
    if config.kind == KIND and (kept := kept_actions(run_path)) is not None:
        return config.model_copy(update={"actions": str(kept)})
    return config


def model_fields(model: str) -> dict[str, Any]:
    """The config fields a model string sets when it names a replay (``replay/FILE``): kind
    and actions file; none for any other model string."""
    if model.startswith(MODEL_PREFIX):
        return {"kind": KIND, "actions": model[len(MODEL_PREFIX):]}
    return {}


def load_actions(path: str | Path) -> list[Proposal]:
    """Parse the actions file, naming the line of any malformed entry."""
    path = Path(path)
    if not path.is_file():
        raise ReplayError(f"{path}: no such actions file")
    proposals = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise ReplayError(f"{path}:{n}: not valid JSON ({err})") from err
        if not isinstance(item, dict) or "action" not in item:
            raise ReplayError(f'{path}:{n}: each line must be {{"action": NAME, "args": {{...}}}}')
        proposals.append(Proposal(action=item["action"], args=item.get("args", {}),
                                  meta=item.get("meta", {})))
    return proposals


class ReplayActor(BaseActor):
    kind = KIND

    def __init__(self, actions: list[Proposal], source: Path | None = None) -> None:
        self.actions = actions
        self.position = 0
        #: the file the actions came from (kept in the run by :meth:`on_created`)
        self.source = source

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayActor:
        return cls(load_actions(path), Path(path))

    def on_created(self, run: RunDir) -> None:
        """Keep the actions file in the new run (``agent.session`` calls this once the run
        directory exists, before anything acts), so ``--resume`` needs no ``--actions``.

        The kept file holds the run's actions whole from step 1, as the actor skips the steps
        the trace holds. A fork's continuation (``--actions FILE`` for ``--fork``) holds only
        what follows step K, so the fork keeps the inherited prefix's actions followed by it;
        a fork that continues its parent's own file keeps that file. A fork's ``run.json``
        then names its kept file, and the actor replays it from here on.
        """
        if self.source is None:  # built from a list (tests): no file to keep
            return
        dest = run.path / ACTIONS_FILE
        origin = run.meta.fork
        prefix = [s for s in run.steps() if s.inherited] if origin is not None else []
        if not prefix or self._continues(RunDir.open(origin.parent_dir)):
            shutil.copyfile(self.source, dest)
        else:
            with dest.open("w") as out:
                out.writelines(json.dumps({"action": s.action, "args": s.args}) + "\n" for s in prefix)
                out.write(self.source.read_text())
        if origin is not None:
            run.meta.config = run.meta.config.model_copy(update={"actions": str(dest)})
            run.save_meta()
            self.actions = load_actions(dest)

    def _continues(self, parent: RunDir) -> bool:
        """Whether the source is the parent run's own actions file (kept, or as configured)."""
        own = [p for p in (kept_actions(parent.path), getattr(parent.meta.config, "actions", None)) if p]
        return any(self.source.resolve() == Path(p).resolve() for p in own)

    def extra_actions(self) -> Sequence[ActionSpec]:
        """Restore Workspace when the actions use it (a tree run's, replayed); none else."""
        from environments.acting.low_level import RESTORE_WORKSPACE

        return (RESTORE_WORKSPACE,) if any(p.action == RESTORE_WORKSPACE.name for p in self.actions) else ()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        self.position = len(history)

    def propose(self, env: Environment) -> Proposal | None:
        if self.position >= len(self.actions):
            return None
        proposal = self.actions[self.position]
        self.position += 1
        return proposal

    def observe(self, proposal: Proposal, observation: Observation) -> None:
        pass
