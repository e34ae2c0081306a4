"""What ``labcoat run TASK --agent pool`` refuses before a run folder exists."""

from __future__ import annotations

from pathlib import Path

from agent.pool.agent import NO_SEARCH
from agent.pool.executors import PoolError, check_address
from agent.pool.settings import PoolSettings


def check_pool(settings: PoolSettings, task: str | Path) -> None:
    """A task with no search split, or a cluster address nothing answers at: ``ValueError``
    with the reason (the CLI's usage error), nothing made."""
    from environments.task.suite import resolve_task

    spec = resolve_task(task)
    if "search" not in spec.splits:
        raise ValueError(NO_SEARCH.format(task=spec.name))
    if settings.address:
        try:
            check_address(settings.address)
        except PoolError as err:
            raise ValueError(str(err)) from None
