"""TUI test helpers: an app over a temporary runs folder, and waiting for its workers."""

from __future__ import annotations

import asyncio
import time

import pytest
from textual.css.query import NoMatches
from textual.errors import NoWidget

from tui.app import LabcoatApp

SIZE = (160, 48)


@pytest.fixture
def app(tmp_path):
    return LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local")


@pytest.fixture
def human_app(tmp_path):
    """The app opened as ``labcoat tui --task`` on a tiny task: a run by hand."""
    from tests.conftest import write_task
    from tui.app import DeepLink

    task = write_task(tmp_path / "tiny")
    return LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local", link=DeepLink(task=str(task)))


async def opened_run(app, pilot):
    """The Run screen the app opens into, once its worker has pushed it."""
    from tui.screens.run import RunScreen

    await settle(app, pilot)
    # pushed is not mounted yet: its on_mount (steps, the first form) may still be to come
    await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.is_mounted)
    await pilot.pause()
    return app.screen


async def settle(app, pilot, rounds: int = 3) -> None:
    """Let workers finish and the UI process what they posted."""
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()


def _holds(predicate, missing: list[str]) -> bool:
    try:
        return bool(predicate())
    except NoMatches as err:
        missing[:] = [str(err)]
        return False


async def wait_for(pilot, predicate, timeout: float = 60.0) -> None:
    """Poll the UI until ``predicate()`` holds (live runs post steps from a thread). A query
    that finds nothing yet counts as not yet: a screen just pushed from a worker's message is
    current before its widgets are mounted, so ``query_one`` in a predicate may run between."""
    deadline = time.monotonic() + timeout
    missing: list[str] = []  # the last query that found nothing, said if it never does
    while not _holds(predicate, missing):
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the UI" + "".join(f" ({m})" for m in missing))
        await pilot.pause(0.05)
        await asyncio.sleep(0)


async def click(pilot, selector: str, timeout: float = 60.0) -> None:
    """Click a widget once it is laid out on screen, and fail if the click lands elsewhere.

    ``pilot.click`` aims at the widget's current region; a widget just un-hidden by a message
    from a worker thread may not be laid out yet, and the click then silently hits whatever
    is under (0, 0). Waiting for a real region makes the tests independent of machine load.

    A Button also ignores clicks while it shows its pressed effect (``-active``, 0.2 s), so
    that a double click cannot answer two proposals. A test that answers the next proposal
    sooner than a person could must wait that effect out, or its click is silently dropped.
    """
    widget = pilot.app.screen.query_one(selector)
    await wait_for(pilot, lambda: _laid_out(widget) and not widget.has_class("-active"), timeout)
    await pilot.pause()
    assert await pilot.click(widget), f"the click meant for {selector} landed elsewhere"


def _laid_out(widget) -> bool:
    try:
        return widget.display and widget.screen.find_widget(widget).region.area > 0
    except NoWidget:
        return False


def make_demo_runs(root):
    """Two finished runs with fixed ids, steps, timings and scores (stable for snapshots)."""
    import json

    from environments.record.runs import RunDir, RunMeta, Step, Totals
    from tests.conftest import write_task

    task = write_task(root / "demo-task")
    runs = root / "runs"
    specs = [
        ("20260101-000000-demo-scripted-aaaaaa", "scripted/demo.txt", 42.0, True),
        ("20260101-000100-demo-baseline-bbbbbb", "baseline/hparam", 6.0, False),
    ]
    made = []
    for run_id, model, value, success in specs:
        meta = RunMeta(run_id=run_id, task="demo-task", task_root=str(task), actor="agent",
                       agent=model.split("/")[0], model=model, budgets={"max_steps": 10},
                       created_at="2026-01-01T00:00:00.000+00:00",
                       updated_at="2026-01-01T00:00:00.000+00:00")
        run = RunDir.create(runs, meta, task / "env")
        steps = [
            ("List Files", {"dir_path": "."}, "data.txt\ntrain.py", None),
            ("Write File", {"file_name": "train.py", "content": f"open('result.txt','w').write('{value:g}')\n"},
             "File train.py written to successfully.", "train.py"),
            ("Execute Script", {"script_name": "train.py"}, "The script has been executed. It printed nothing.", None),
            ("Final Answer", {"final_answer": f"result {value:g}"}, "Final answer submitted.", None),
        ]
        for i, (action, args, obs, edited) in enumerate(steps, 1):
            if edited:
                (run.workspace / edited).write_text(args["content"])
            if action == "Execute Script":
                (run.workspace / "result.txt").write_text(f"{value:g}")
            manifest = run.snapshot(i)
            previous = run.snapshots.load(f"{i - 1:05d}")
            run.append(Step(index=i, time="2026-01-01T00:00:00.000+00:00", actor="agent", action=action,
                            args=args, observation=obs, seconds=0.5, snapshot=manifest.label,
                            changed=manifest.changed_since(previous),
                            meta={"fields": {"Reflection": "Looking at the files.",
                                             "Research Plan and Status": "1. read\n2. edit\n3. run",
                                             "Thought": f"Step {i}: {action}."}}))
        run.meta.totals = Totals(steps=4, tokens_in=1200, tokens_out=300, cost=0.0123, seconds=12.0)
        run.meta.status = "finished"
        run.meta.status_reason = "final answer"
        run.meta.finished_at = "2026-01-01T00:00:12.000+00:00"
        run.save_meta()
        def score(step: int, v: float) -> dict:
            imp = (v - 6.0) / 6.0
            return {"task": "demo-task", "metric": "total", "direction": "higher", "value": v,
                    "baseline": 6.0, "improvement": imp, "success": imp >= 0.1, "threshold": 0.1,
                    "step": step, "eval_seconds": 0.2, "failure": None, "detail": "",
                    "scored_at": "2026-01-01T00:00:20.000+00:00"}

        run.write_json("score.json", score(4, value))
        curve = [score(0, 6.0), score(2, 6.0), score(3, value), score(4, value)]
        (run.path / "scores.json").write_text(json.dumps({"steps": curve}))
        assert success == (value > 6.6)
        made.append(run)
    return runs, made
