"""Anytime curves: normalized score against wall-clock and tokens, for agents and people alike."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from environments.record.runs import RunManifest, RunMeta, Totals
from environments.reports import (
    anytime_curve,
    anytime_curves,
    build_report,
    load_runs,
    step_value,
    trajectory,
    write_plots,
)
from environments.scoring.score import Score
from tui.cli import app

START = "2026-01-01T10:00:00.000+00:00"


def score(step: int, normalized: float | None, failure: str | None = None) -> dict:
    return Score(task="t", metric="acc", direction="higher", value=None if failure else 1.0,
                 baseline=0.5, improvement=None if failure else 0.1, success=False, threshold=0.5,
                 step=step, failure=failure, normalized=normalized).model_dump(mode="json")


def make_run(root: Path, run_id: str, actor: str, model: str | None, scores: list[dict],
             step_times: list[float], calls: list[tuple[int, int]] = (), seed: int = 0) -> Path:
    """A run dir as the runner and the TUI leave it: run.json, trace.jsonl with step times,
    llm/calls.jsonl with (step, tokens) per call, scores.json."""
    path = root / run_id
    path.mkdir(parents=True)
    meta = RunMeta(run_id=run_id, task="t", task_root="/nowhere", actor=actor, model=model, seed=seed,
                   agent=actor, status="finished", manifest=RunManifest(started_at=START),
                   totals=Totals(steps=len(step_times), tokens_in=sum(t for _, t in calls)))
    (path / "run.json").write_text(meta.model_dump_json())
    lines = []
    for i, seconds in enumerate(step_times, 1):
        stamp = f"2026-01-01T10:{int(seconds) // 60:02d}:{int(seconds) % 60:02d}.000+00:00"
        lines.append(json.dumps({"index": i, "time": stamp, "actor": actor, "action": "Edit",
                                 "observation": "ok"}))
    (path / "trace.jsonl").write_text("\n".join(lines) + "\n" + '{"index": 9, "time": "torn')
    if calls:
        (path / "llm").mkdir()
        (path / "llm" / "calls.jsonl").write_text("\n".join(json.dumps(
            {"step": step, "usage": {"input": tokens - 10, "output": 10}}) for step, tokens in calls) + "\n")
    (path / "scores.json").write_text(json.dumps({"steps": scores}))
    return path


def test_a_trajectory_starts_at_the_baseline_and_never_goes_back_in_budget():
    values = {1: 0.2, 2: 0.5, 3: 0.4}
    assert trajectory(values, {1: 10.0, 2: 30.0, 3: 25.0}) == [(0.0, 0.0), (10.0, 0.2), (30.0, 0.5),
                                                                  (30.0, 0.4)]
    assert trajectory({0: 0.1, 2: 0.9}, {2: 5.0}) == [(0.0, 0.1), (5.0, 0.9)]
    assert trajectory({1: 0.3, 2: 0.6}, {2: 7.0}) == [(0.0, 0.0), (7.0, 0.6)]  # step 1 has no time


def test_the_curve_averages_the_runs_still_going_and_says_how_many():
    a = [(0.0, 0.0), (10.0, 0.4), (20.0, 1.0)]
    b = [(0.0, 0.0), (15.0, 0.2)]  # ended at 15 s: not carried into the mean at 20 s
    curve = anytime_curve([(a, 20.0), (b, 15.0)])
    assert [p.x for p in curve] == [0.0, 10.0, 15.0, 20.0]
    assert [p.mean for p in curve] == pytest.approx([0.0, 0.2, 0.3, 1.0])
    assert curve[2].stderr == pytest.approx(statistics.stdev([0.4, 0.2]) / 2 ** 0.5)
    assert [(p.runs, p.ended) for p in curve] == [(2, 0), (2, 0), (2, 0), (1, 1)]


def test_failed_evaluations_count_as_the_baseline_and_infrastructure_as_nothing():
    s = Score.model_validate(score(3, None, failure="eval_error"))
    assert step_value(s, anchored=True) == 0.0
    assert step_value(s, anchored=False) is None
    assert step_value(Score.model_validate(score(3, None, failure="infrastructure")), anchored=True) is None
    assert step_value(Score.model_validate(score(3, 0.7)), anchored=True) == 0.7


@pytest.fixture
def runs(tmp_path) -> Path:
    root = tmp_path / "runs"
    make_run(root, "agent1", "agent", "openai/m", [score(1, 0.2), score(2, 0.6)], [10, 40],
             calls=[(1, 100), (2, 300)])
    make_run(root, "agent2", "agent", "openai/m", [score(2, 0.0, failure="eval_error"), score(3, 0.8)],
             [5, 20, 60], calls=[(1, 50), (3, 250)], seed=1)  # step 2 made no model call
    make_run(root, "person", "human", None, [score(1, 0.5), score(2, 0.9)], [120, 300])
    return root


def test_curves_per_actor_against_clock_and_tokens_from_run_dirs(runs):
    records = {r.run_id: r for r in load_runs(runs)}
    assert records["agent1"].step_seconds == {1: 10.0, 2: 40.0}
    assert records["agent2"].step_tokens == {1: 50, 3: 300}
    assert records["agent2"].normalized_curve == {2: 0.0, 3: 0.8}
    clock = anytime_curves(list(records.values()), "seconds")["t"]
    assert set(clock) == {"openai/m", "human"}  # people are drawn with agents
    assert [(p.x, p.mean) for p in clock["human"]] == [(0.0, 0.0), (120.0, 0.5), (300.0, 0.9)]
    agents = {p.x: p.mean for p in clock["openai/m"]}
    assert agents[20.0] == pytest.approx((0.2 + 0.0) / 2)
    assert agents[60.0] == pytest.approx(0.8)  # agent1 ended at 40 s: only agent2 reached 60 s
    tokens = anytime_curves(list(records.values()), "tokens")["t"]
    assert set(tokens) == {"openai/m"}  # a person spends no tokens: not on this axis
    by_tokens = {p.x: p.mean for p in tokens["openai/m"]}
    # agent2's step 2 made no call: it is at the tokens of step 1 (50)
    assert by_tokens[50.0] == pytest.approx((0.0 + 0.0) / 2)
    assert by_tokens[300.0] == pytest.approx((0.2 + 0.8) / 2)  # agent1 spent 400 by its step 2
    assert by_tokens[400.0] == pytest.approx(0.6)  # agent2 ended at 300 tokens: agent1 alone
    assert [(p.runs, p.ended) for p in tokens["openai/m"] if p.x == 400.0] == [(1, 1)]


def test_report_json_and_plots_carry_the_anytime_curves(runs, tmp_path):
    res = CliRunner().invoke(app, ["report", "runs", str(runs), "--json", "--plots", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    curves = data["anytime"]["t"]
    assert set(curves) == {"openai/m", "human"} and curves["human"]["tokens"] == []
    assert [p["x"] for p in curves["human"]["seconds"]] == [0.0, 120.0, 300.0]
    assert set(curves["openai/m"]["seconds"][0]) == {"x", "mean", "stderr", "runs", "ended"}
    assert (tmp_path / "p" / "anytime_t.png").stat().st_size > 1000
    assert "normalized_curve" not in data["runs"][0]  # per-step data stays out of the run rows


def test_runs_without_anchors_have_no_anytime_curve(tmp_path):
    path = make_run(tmp_path, "r", "agent", "m", [score(1, None, failure="eval_error")], [3])
    (record,) = load_runs(path)
    assert not record.anchored and record.normalized_curve == {}
    assert anytime_curves([record]) == {}
    written = write_plots(build_report([record]), [record], tmp_path / "plots")
    assert not any(p.name.startswith("anytime") for p in written)


async def test_the_scores_screen_switches_to_the_anytime_curves(runs):
    from textual.widgets import Static

    from tui.app import LabcoatApp
    from tui.screens.scores import ScoresScreen

    app = LabcoatApp(runs_dir=runs, sandbox="local", first_screen=lambda: ScoresScreen(runs))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()

        def plot() -> str:
            return str(app.screen.query_one("#scores-plot", Static).render())

        assert "improvement over steps" in plot()
        await pilot.press("a")
        text = plot()
        assert "normalized score over wall-clock" in text and "human" in text and "300 s" in text
        await pilot.press("a")
        text = plot()
        assert "over tokens" in text and "400 tok" in text and "human" not in text
        await pilot.press("a")
        assert "improvement over steps" in plot()


def test_step_times_and_tokens_read_the_formats_the_runner_writes(tmp_path):
    """The readers' fast paths on lines as ``Step`` and the call log write them (prompts that
    quote the very patterns they look for included), and the slow path on any other order."""
    from environments.record.runs import Step
    from environments.reports import read_step_times, read_step_tokens

    tricky = 'a prompt quoting {"index":7,"time":"x"} and "step": 9, "messages" and "usage": {"input": 999, "output": 1'
    steps = [Step(index=1, time="2026-01-01T10:00:05.000+00:00", actor="agent", action="A", observation=tricky,
                  inherited=True),
             Step(index=2, time="2026-01-01T10:00:30.000+00:00", actor="agent", action="A", observation=tricky)]
    other_order = json.dumps({"time": "2026-01-01T10:01:00.000+00:00", "index": 3, "actor": "agent",
                              "action": "A", "observation": "ok"})
    (tmp_path / "trace.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in steps) + other_order + "\n")
    assert read_step_times(tmp_path, START) == {2: 30.0, 3: 60.0}
    (tmp_path / "llm").mkdir()
    calls = [{"call": n, "time": START, "role": "agent", "model": "m", "step": step, "messages": [
        {"role": "user", "content": tricky}], "tools": [], "reply": tricky, "tool_calls": [],
        "usage": {"input": tokens, "output": 5, "cached": 0, "estimated": True}, "cost": 0.0}
        for n, (step, tokens) in enumerate([(1, 95), (1, 45), (3, 195)], 1)]
    lines = [json.dumps(c) for c in calls] + [json.dumps({"usage": {"output": 7, "input": 3}, "step": 4})]
    (tmp_path / "llm" / "calls.jsonl").write_text("\n".join(lines) + "\n")
    assert read_step_tokens(tmp_path) == {1: 150, 3: 350, 4: 360}
