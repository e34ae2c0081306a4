"""The time budget counts the run's own time: a live view's pauses are left out."""

from __future__ import annotations

import time

from agent.factory import make_actor
from agent.runner import Budgets, RunHooks, create_run, drive
from tests.agent.helpers import react, write_replies


class PausingHooks(RunHooks):
    """A view that holds the run paused before every step (as the TUI's Pause does)."""

    def __init__(self, pause: float) -> None:
        self.pause = pause

    def before_step(self, run) -> None:
        began = time.perf_counter()
        time.sleep(self.pause)
        self.paused_seconds += time.perf_counter() - began


def test_paused_time_is_not_the_runs_time(tiny_task, tmp_path):
    model = write_replies(tmp_path / "r.txt", [react("List Files", {"dir_path": "."}),
                                               react("List Files", {"dir_path": "."}),
                                               react("Final Answer", {"final_answer": "done"})])
    actor = make_actor("research", model=model)
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local", model=model,
                           agent="research", budgets=Budgets(max_time=3.0))
    hooks = PausingHooks(pause=2.0)  # 6 s of pauses against a 3 s budget
    meta = drive(run, task, actor, hooks=hooks)
    assert meta.status == "finished" and meta.final_answer == "done", meta.status_reason
    assert hooks.paused_seconds >= 5.9
    assert meta.totals.seconds < 3.0  # the run's own time: the pauses left out
