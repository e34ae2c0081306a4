"""Narrow screens keep the point in sight (#42.7): the Diff tab at 120×40 shows the changed
value, the Scores and Runs screens at 80×24 keep the improvement, the run id and "(from K)",
the Runs screen lists every run its Scores screen counts (a batch's, an uplift's), and
`labcoat report runs` at 80 columns keeps each headline number on one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.record.runs import (
    ActorSpec,
    ForkOrigin,
    RunDir,
    RunMeta,
    Step,
    Totals,
)
from tests.conftest import write_task
from tests.tui.conftest import wait_for
from tui.app import LabcoatApp
from tui.screens.run import RunScreen
from tui.screens.runs import RunsScreen
from tui.screens.scores import ScoresScreen

LONG_MODEL = "openai/gpt-4o-mini-2024-07-18-a-rather-long-fine-tune-name"
T0 = "2026-01-01T00:00:00.000+00:00"


def _run(runs: Path, task: Path, run_id: str, model: str, seed: int, value: float,
         parent: str | None = None) -> RunDir:
    """A finished, scored run (no steps) of ``model`` on the demo task."""
    meta = RunMeta(run_id=run_id, task="demo-task", task_root=str(task), actor="agent",
                   config=ActorSpec(kind=model.split("/")[0] if model.startswith("baseline") else "research",
                                    model=model, seed=seed), created_at=T0, updated_at=T0)
    if parent is not None:
        meta.fork = ForkOrigin(parent=parent, parent_dir=str(runs / parent), step=2)
    run = RunDir.create(runs, meta, task / "env")
    run.meta.totals = Totals(steps=4, seconds=12.0)
    run.meta.status, run.meta.status_reason = "finished", "final answer"
    run.save_meta()
    imp = (value - 6.0) / 6.0
    run.write_json("score.json", {"task": "demo-task", "metric": "total", "direction": "higher",
                                  "value": value, "baseline": 6.0, "improvement": imp,
                                  "success": imp >= 0.1, "threshold": 0.1, "step": 4,
                                  "eval_seconds": 0.2, "failure": None, "detail": "", "scored_at": T0})
    return run


def family_and_batch(root: Path, model: str = LONG_MODEL) -> Path:
    """Two seeds of a long-named model (2/2 successes), a baseline, its fork at step 2, and a
    batch's run nested as ``labcoat batch`` lays them out (``BATCH/runs/<key>/<run_id>``)."""
    task = write_task(root / "demo-task")
    runs = root / "runs"
    _run(runs, task, "20260101-000000-demo-research-aaaaaa", model, 0, 42.0)
    _run(runs, task, "20260101-000001-demo-research-aaaaab", model, 1, 40.0)
    _run(runs, task, "20260101-000002-demo-baseline-bbbbbb", "baseline/hparam", 0, 6.5)
    _run(runs, task, "20260101-000003-demo-baseline-cccccc", "baseline/hparam", 0, 7.0,
         parent="20260101-000002-demo-baseline-bbbbbb")
    nested = runs / "batch-x" / "runs" / "demo-baseline-s1"
    nested.mkdir(parents=True)
    _run(nested, task, "20260101-000004-demo-baseline-dddddd", "baseline/hparam", 1, 6.6)
    return runs


def _visible_columns(table) -> list[str]:
    """The labels of the DataTable's columns wholly inside the screen's width."""
    right, shown = 0, []
    for column in table.ordered_columns:
        right += column.get_render_width(table)
        if right <= table.app.size.width:
            shown.append(column.label.plain)
    return shown


async def test_the_runs_screen_lists_every_run_the_scores_screen_counts(tmp_path):
    runs = family_and_batch(tmp_path)
    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: RunsScreen(runs))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        listed = {run.meta.run_id for run in app.screen.runs}
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ScoresScreen))
        counted = sum(row.runs for row in app.screen.rows)
    assert "20260101-000004-demo-baseline-dddddd" in listed  # the batch's run
    assert len(listed) == counted == 5


async def test_at_80x24_the_runs_screen_tells_a_run_from_its_fork(tmp_path):
    runs = family_and_batch(tmp_path)
    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: RunsScreen(runs))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#runs-table")
        shown = _visible_columns(table)
        assert {"improvement", "run", "steps"} <= set(shown), shown
        run_col = [c.label.plain for c in table.ordered_columns].index("run")
        steps_col = [c.label.plain for c in table.ordered_columns].index("steps")
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        fork = next(r for r in rows if "cccccc" in str(r[run_col]))
        assert "(from 2)" in str(fork[steps_col])
        # the fork's id is whole on screen, not cut where it differs from its parent's
        assert table.columns[table.ordered_columns[run_col].key].get_render_width(table) >= len(
            "└ 20260101-000003-demo-baseline-cccccc")


async def test_at_80x24_the_scores_screen_shows_the_improvement(tmp_path):
    runs = family_and_batch(tmp_path)
    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: ScoresScreen(runs))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = _visible_columns(app.screen.query_one("#scores-table"))
        assert "mean improvement" in shown and "success" in shown, shown


def _edited_run(root: Path) -> RunDir:
    """A run whose one step changes a value at the end of a long line."""
    task = write_task(root / "demo-task")
    long_line = ("model = RandomForestClassifier(n_estimators=100, max_depth=None, "
                 "min_samples_leaf=1, random_state=0, n_jobs=1, class_weight=None, SEED_VALUE={})\n")
    meta = RunMeta(run_id="20260101-000000-demo-edit-eeeeee", task="demo-task", task_root=str(task),
                   actor="agent", created_at=T0, updated_at=T0)
    run = RunDir.create(root / "runs", meta, task / "env")
    (run.workspace / "train.py").write_text(long_line.format(11111))
    run.snapshot(0)
    (run.workspace / "train.py").write_text(long_line.format(98765))
    manifest = run.snapshot(1)
    run.append(Step(index=1, time=T0, actor="agent", action="Write File",
                    args={"file_name": "train.py", "content": long_line.format(98765)},
                    observation="written", seconds=0.1, snapshot=manifest.label, changed=["train.py"]))
    run.meta.status = "finished"
    run.save_meta()
    return run


async def test_at_120x40_the_diff_tab_shows_the_changed_value(tmp_path):
    run = _edited_run(tmp_path)
    app = LabcoatApp(runs_dir=run.path.parent, sandbox="local",
                     first_screen=lambda: RunScreen(RunDir.open(run.path)))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2")  # the Diff tab
        await pilot.pause(0.3)
        diff = app.screen.query_one("#diff")
        assert "98765" in diff.text
        rows = [diff.render_line(y).text for y in range(diff.size.height)]
        on_screen = "\n".join(rows)
        assert "SEED_VALUE=98765" in on_screen and "SEED_VALUE=11111" in on_screen, on_screen


@pytest.mark.parametrize("model", [LONG_MODEL, "openai/gpt-4o-mini-2024-07-18-ft", "openai/gpt-4o"])
def test_report_runs_at_80_columns_keeps_each_headline_on_one_line(tmp_path, model):
    from tui.cli import app as cli

    runs = family_and_batch(tmp_path, model)
    result = CliRunner().invoke(cli, ["report", "runs", str(runs)], env={"COLUMNS": "80"},
                                terminal_width=80)
    assert result.exit_code == 0, result.output
    out = result.output
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "100% ± 0% (2/2)" in out, out  # not folded over three lines
    header = "\n".join(out.splitlines()[:6])
    assert "improvement" in header, out  # the headline kept although the label is long
    assert "--wide adds" in out and "mean" not in out.split("--wide adds")[1]  # "mean improvement" shown
    json.loads(CliRunner().invoke(cli, ["report", "runs", str(runs), "--json"]).output)
