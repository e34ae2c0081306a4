"""The time budget counts the run's own time: a live view's pauses are left out."""

from __future__ import annotations

from agent.actor import BaseActor
from agent.factory import make_actor
from agent.runner import Budgets, RunHooks, create_run, drive
from tests.agent.helpers import react, write_replies


class FakeClock:
    """The time budget's clock, moved by hand: what is asserted does not depend on the load."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class PausingHooks(RunHooks):
    """A view that holds the run paused before every step (as the TUI's Pause does)."""

    def __init__(self, clock: FakeClock, pause: float, counted: bool = True) -> None:
        self.clock, self.pause, self.counted = clock, pause, counted

    def before_step(self, run) -> None:
        self.clock.now += self.pause
        if self.counted:
            self.paused_seconds += self.pause


def _three_steps(tiny_task, tmp_path, hooks, clock):
    model = write_replies(tmp_path / "r.txt", [react("List Files", {"dir_path": "."}),
                                               react("List Files", {"dir_path": "."}),
                                               react("Final Answer", {"final_answer": "done"})])
    actor = make_actor("research", model=model)
    run, task = create_run(tiny_task, actor, tmp_path / "runs", sandbox="local", model=model,
                           agent="research", budgets=Budgets(max_time=3.0))
    return drive(run, task, actor, hooks=hooks, clock=clock)


def test_paused_time_is_not_the_runs_time(tiny_task, tmp_path):
    clock = FakeClock()
    hooks = PausingHooks(clock, pause=2.0)  # 6 s of pauses against a 3 s budget
    meta = _three_steps(tiny_task, tmp_path, hooks, clock)
    assert meta.status == "finished" and meta.final_answer == "done", meta.status_reason
    assert hooks.paused_seconds == 6.0
    assert meta.totals.seconds == 0.0  # the run's own time: the pauses left out


def test_time_that_is_not_a_pause_counts(tiny_task, tmp_path):
    """The same 2 s before each step, not marked as a pause: the budget stops the run."""
    clock = FakeClock()
    meta = _three_steps(tiny_task, tmp_path, PausingHooks(clock, pause=2.0, counted=False), clock)
    assert meta.status == "max_time", meta.status_reason
    assert meta.totals.seconds >= 3.0


class ClosingActor(BaseActor):
    """An actor in code that lists files until a budget stops it, then asks for one more step."""

    kind = "agent"

    def __init__(self, closing: tuple[str, dict]) -> None:
        self.closing_proposal = closing
        self.observed: list[str] = []

    def extra_actions(self):
        from environments.acting.low_level import RESTORE_WORKSPACE

        return (RESTORE_WORKSPACE,)

    def start(self, env, history) -> None:
        pass

    def propose(self, env):
        from agent.actor import Proposal

        if env.step_count == 0:
            return Proposal(action="Write File", args={"file_name": "train.py", "content": "print('edited')\n"})
        return Proposal(action="List Files", args={"dir_path": "."})

    def observe(self, proposal, observation) -> None:
        self.observed.append(proposal.action)

    def closing(self, env):
        from agent.actor import Proposal

        action, args = self.closing_proposal
        return Proposal(action=action, args=args)


def test_after_a_budget_only_a_free_closing_step_runs(tiny_task, tmp_path):
    """The closing step may not compute past the budget: Execute Script is refused (nothing runs,
    nothing is recorded), Restore Workspace (free) runs, is marked, and keeps the budget's status."""
    for closing, runs in ((("Execute Script", {"script_name": "train.py"}), False),
                          (("Restore Workspace", {"step": 0}), True)):
        actor = ClosingActor(closing)
        run, task = create_run(tiny_task, actor, tmp_path / f"runs-{runs}", sandbox="local",
                               budgets=Budgets(max_steps=3))
        meta = drive(run, task, actor)
        steps = run.steps()
        assert meta.status == "max_steps"
        if not runs:
            assert len(steps) == 3 and "was refused" in meta.status_reason
            assert (run.workspace / "train.py").read_text() == "print('edited')\n"
            continue
        assert len(steps) == 4 and steps[-1].meta == {"closing": True} and not steps[-1].error
        assert steps[-1].changed == ["train.py"] and "closing step 4, Restore Workspace: done" in meta.status_reason
        assert (run.workspace / "train.py").read_text() == (tiny_task / "env" / "train.py").read_text()
        assert actor.observed[-1] == "Restore Workspace"


class EndingActor(ClosingActor):
    """Counts the runner's end call; raises from ``propose`` when told to (a crash mid-run)."""

    def __init__(self, crash: bool) -> None:
        super().__init__(("List Files", {"dir_path": "."}))
        self.crash, self.ended = crash, 0

    def propose(self, env):
        if self.crash and env.step_count == 1:
            raise RuntimeError("the actor broke")
        return super().propose(env)

    def on_end(self) -> None:
        self.ended += 1


def test_the_actor_is_told_the_run_ended_however_it_ended(tiny_task, tmp_path):
    """What an actor holds beyond the run's sandbox (the research pool's workers) is released
    when the run ends: at a budget and after a crash alike, once."""
    import pytest

    for crash in (False, True):
        actor = EndingActor(crash)
        run, task = create_run(tiny_task, actor, tmp_path / f"runs-{crash}", sandbox="local",
                               budgets=Budgets(max_steps=2))
        if crash:
            with pytest.raises(RuntimeError, match="the actor broke"):
                drive(run, task, actor)
        else:
            assert drive(run, task, actor).status == "max_steps"
        assert actor.ended == 1
