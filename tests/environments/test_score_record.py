"""``score --all-steps`` never writes the run's ``score.json`` from a per-step result (issue 37,
class 3, its record half).

The curve's steps are scored in one kept scratch and sandbox (``score_scratch.StepScorer``);
whatever one step could leave there for the next, the run's own result (``score.json``) comes
only from its result step scored alone (``score_run``), as ``labcoat score RUN`` scores it. The
tests stand a scorer that "leaks" (every step it scores reads 999) in for the kept scratch, so
they hold whatever the scratch's own defences do.
"""

from __future__ import annotations

import json

import pytest

from agent import session
from environments.scoring import score as score_module
from environments.scoring.evaluate import EvalResult
from environments.scoring.score import load_scores, score_run, score_steps
from tests.environments.test_scoring import run_actions, write

LEAKED = 999.0


class LeakyScorer:
    """A kept scratch whose every step scores :data:`LEAKED` (what a leak from step to step
    would make of them)."""

    def __init__(self, task, sandbox: str = "auto") -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def evaluate(self, restored) -> EvalResult:
        return EvalResult(value=LEAKED, seconds=0.0)


@pytest.fixture
def leaky(monkeypatch):
    monkeypatch.setattr(score_module, "StepScorer", LeakyScorer)


@pytest.fixture
def three_steps(tiny_task, tmp_path):
    return run_actions(tiny_task, tmp_path, [write("result.txt", "3"), write("result.txt", "12"),
                                             write("result.txt", "30")])


def test_the_curve_leaves_score_json_alone(three_steps, leaky):
    run, task = three_steps
    score_run(run, task, sandbox="local")
    before = (run.path / "score.json").read_bytes()
    assert json.loads(before)["value"] == 30.0
    curve = score_steps(run, task, sandbox="local")
    assert [s.value for s in curve] == [LEAKED] * 3  # the leaky scorer did score the curve
    assert (run.path / "score.json").read_bytes() == before


def test_the_curve_alone_writes_no_score_json(three_steps, leaky):
    run, task = three_steps
    score_steps(run, task, sandbox="local")
    assert not (run.path / "score.json").exists()
    assert [s.step for s in load_scores(run.path).values()] == [1, 2, 3]


def test_all_steps_score_the_result_step_alone(three_steps, leaky):
    """``session.score(every_step=True)`` (``labcoat score --all-steps``, a batch's curve): the
    curve, then the run's result, its last step scored alone, which alone is ``score.json``
    and the curve's point for that step."""
    run, _ = three_steps
    scores = session.score(run, every_step=True, sandbox="local", baseline_runs=1)
    assert [(s.step, s.value) for s in scores] == [(1, LEAKED), (2, LEAKED), (3, 30.0)]
    assert json.loads((run.path / "score.json").read_text())["value"] == 30.0
    assert {k: s.value for k, s in load_scores(run.path).items()} == {1: LEAKED, 2: LEAKED, 3: 30.0}
    picked = session.score(run, every_step=True, points=2, sandbox="local", baseline_runs=1)
    assert [(s.step, s.value) for s in picked] == [(1, LEAKED), (3, 30.0)]


def test_score_cli_all_steps_reports_the_result_apart(three_steps, leaky):
    from typer.testing import CliRunner

    from tui.cli import app

    run, _ = three_steps
    res = CliRunner().invoke(app, ["score", str(run.path), "--all-steps", "--sandbox", "local",
                                   "--json"])
    assert res.exit_code == 0, res.output
    [out] = json.loads(res.stdout)
    assert [(s["step"], s["value"]) for s in out["steps"]] == [(1, LEAKED), (2, LEAKED), (3, 30.0)]
    assert (out["result"]["step"], out["result"]["value"]) == (3, 30.0)
    assert json.loads((run.path / "score.json").read_text())["value"] == 30.0


@pytest.mark.parametrize("flags", [["--all-steps"], ["--all-steps", "--points", "2"],
                                   ["--step", "3"], ["--step", "2"]])
def test_score_json_is_byte_identical_after_a_curve_or_a_step(three_steps, leaky, flags):
    """What a person expects: only a whole-run score (``labcoat score RUN``) writes the run's
    result; ``--all-steps`` and ``--step N`` (even the last step) add to the curve alone."""
    from typer.testing import CliRunner

    from tui.cli import app

    run, task = three_steps
    score_run(run, task, sandbox="local")
    before = (run.path / "score.json").read_bytes()
    res = CliRunner().invoke(app, ["score", str(run.path), *flags, "--sandbox", "local", "--json"])
    assert res.exit_code == 0, res.output
    assert (run.path / "score.json").read_bytes() == before
    curve = load_scores(run.path)
    assert (curve[int(flags[-1])].value in (12.0, 30.0)) if "--step" in flags else (
        curve[1].value == LEAKED)  # scored, and on the curve


def test_a_stale_or_failed_result_is_scored_again_alone(three_steps, leaky):
    """``score.json`` of another step (a run resumed past it) or an infrastructure failure is
    no result of this run: ``--all-steps`` scores the result step alone, never from the curve."""
    run, task = three_steps
    score_run(run, task, step=2, sandbox="local", result=True)
    assert json.loads((run.path / "score.json").read_text())["step"] == 2
    session.score(run, every_step=True, sandbox="local", baseline_runs=1)
    assert json.loads((run.path / "score.json").read_text())["value"] == 30.0
