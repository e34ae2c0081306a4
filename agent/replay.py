"""The replay actor: performs a JSONL list of ``{"action": NAME, "args": {...}}`` in order.

Used for demos, for tests, and to reproduce a run's actions exactly. On resume it skips the
actions the trace already holds.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from agent.actor import Proposal
from environments.actions import ActionSpec
from environments.environment import Environment
from environments.observation import Observation
from environments.runs import Step


ACTIONS_FILE = "actions.jsonl"  # the run's own copy, so --resume needs no --actions


class ReplayError(ValueError):
    pass


def keep_actions(run_path: Path, actions: Path) -> None:
    """Copy the actions file into the run directory (the original may move or change)."""
    shutil.copyfile(actions, Path(run_path) / ACTIONS_FILE)


def kept_actions(run_path: Path) -> Path | None:
    """The actions file a replay run kept, if it is one."""
    path = Path(run_path) / ACTIONS_FILE
    return path if path.is_file() else None


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


class ReplayActor:
    kind = "replay"

    def __init__(self, actions: list[Proposal]) -> None:
        self.actions = actions
        self.position = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayActor:
        return cls(load_actions(path))

    def extra_actions(self) -> Sequence[ActionSpec]:
        """Restore Workspace when the actions use it (a tree run's, replayed); none else."""
        from environments.low_level import RESTORE_WORKSPACE

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
