"""TUI responsiveness: open a 1,000-step run, and render one new live step (Pilot, headless).

Goals: open < 1 s, one new step < 100 ms. Prints both, next to the time to read the same
trace from disk (the floor any viewer pays), measured in the same run.

    python tests/benchmarks/bench_tui.py [--steps 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from textual.screen import Screen  # noqa: E402

from environments.record.runs import RunDir, RunMeta, Step  # noqa: E402
from tests.conftest import write_task  # noqa: E402
from tui.app import LabcoatApp  # noqa: E402
from tui.screens.run import RunScreen  # noqa: E402


def make_run(root: Path, steps: int) -> RunDir:
    task = write_task(root / "task")
    run = RunDir.create(root / "runs", RunMeta(run_id="bench", task="task", task_root=str(task),
                                                 actor="agent"), task / "env")
    for i in range(1, steps + 1):
        (run.workspace / "train.py").write_text(f"LR = {i}\n")
        manifest = run.snapshot(i)
        run.append(Step(index=i, actor="agent", action="Write File",
                        args={"file_name": "train.py", "content": f"LR = {i}\n"},
                        observation="File train.py written to successfully.\n" * 5,
                        snapshot=manifest.label, changed=["train.py"],
                        meta={"fields": {"Thought": f"try LR={i}", "Reflection": "ok"}}))
    return run


def record_live_step(run: RunDir, index: int) -> Step:
    """The step an agent records next: an edit with a snapshot on disk, like every live step.

    A step with no snapshot and no changed file would leave the workspace tree and the diff
    with nothing to show, and so measure less than a live step costs.
    """
    (run.workspace / "train.py").write_text(f"LR = {index}\nEPOCHS = 3\n")
    previous = run.snapshots.load(f"{index - 1:05d}")
    manifest = run.snapshot(index)
    step = Step(index=index, actor="agent", action="Write File",
                args={"file_name": "train.py", "content": f"LR = {index}\nEPOCHS = 3\n"},
                observation="File train.py written to successfully.\n" * 5,
                snapshot=manifest.label, changed=manifest.changed_since(previous),
                meta={"fields": {"Thought": f"add epochs at LR={index}", "Reflection": "ok"}})
    run.append(step)
    return step


async def measure(run: RunDir) -> tuple[float, float]:
    """Times inside a running app (the app's own start-up is not the run's cost)."""
    opened: dict[str, float] = {}
    app = LabcoatApp(runs_dir=run.path.parent, sandbox="local", first_screen=Screen)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        start = time.perf_counter()
        await app.push_screen(RunScreen(RunDir.open(run.path)))
        await pilot.pause()
        opened["open"] = time.perf_counter() - start
        screen = app.screen
        extra = record_live_step(run, len(screen.steps) + 1)
        start = time.perf_counter()
        screen.add_step(extra)
        await pilot.pause()
        opened["step"] = time.perf_counter() - start
    return opened["open"], opened["step"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = make_run(Path(tmp), args.steps)
        t = time.perf_counter()
        RunDir.open(run.path).steps()
        read = time.perf_counter() - t
        open_s, step_s = asyncio.run(measure(run))
    print(f"steps={args.steps} read trace {read * 1000:.0f} ms | open run screen {open_s * 1000:.0f} ms "
          f"(goal < 1000, {open_s / read:.1f}x the read) | render one new step {step_s * 1000:.0f} ms "
          f"(goal < 100)")


if __name__ == "__main__":
    main()
