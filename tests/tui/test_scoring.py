"""Scoring in the TUI: a run is scored when it ends; the Score tab shows why it ended, the
score, and the per-step curve."""

from __future__ import annotations

import json

from environments.scoring.score import Score
from tests.tui.conftest import SIZE, make_demo_runs, wait_for
from tests.tui.test_agent_mode import scripted_session
from tui.app import LabcoatApp
from tui.screens.run import RunScreen


async def test_an_agent_run_started_in_the_tui_is_scored_when_it_ends(tmp_path):
    session = scripted_session(tmp_path)
    score = session.run.path / "score.json"
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: RunScreen(session.run, agent=session))
    async with app.run_test(size=SIZE) as pilot:
        summary = app.screen.query_one("#run-summary")
        await wait_for(pilot, lambda: score.exists())
        await wait_for(pilot, lambda: "score: total = 50" in str(summary.render()))
        assert "finished: final answer" in str(summary.render())
    s = Score.model_validate(json.loads(score.read_text()))
    assert s.value == 50 and s.success and s.step == 4


async def test_the_score_tab_shows_the_curve_and_why_an_error_run_ended(tmp_path):
    _, made = make_demo_runs(tmp_path)
    run = made[0]
    run.meta.status, run.meta.status_reason = "error", "model failed: [429] rate limited [/INST]"
    run.save_meta()
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local", first_screen=lambda: RunScreen(run))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = str(app.screen.query_one("#run-summary").render())
        assert "error: model failed: [429] rate limited [/INST]" in text
        assert "score: total = 42" in text and "improvement over steps" in text
        assert "●" in text  # the curve is drawn


def _interrupted_after_one_step(tmp_path):
    import threading

    session = scripted_session(tmp_path)
    session.pause()
    session.on_step = lambda step: session.stop()
    worker = threading.Thread(target=session.run_to_end)
    worker.start()
    session.step_once()
    worker.join(60)
    assert session.run.meta.status == "interrupted" and len(session.run.steps()) == 1
    return session.run


async def test_the_runs_screen_scores_a_run_and_resumes_an_interrupted_one(tmp_path):
    from tui.screens.runs import RunsScreen

    run = _interrupted_after_one_step(tmp_path)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: RunsScreen(tmp_path / "runs"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("c")
        await wait_for(pilot, lambda: (run.path / "score.json").exists())
        await wait_for(pilot, lambda: str(app.screen.query_one("#runs-table").get_cell_at((0, 5))) != "—")
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen))
        resumed = app.screen
        assert resumed.agent is not None and resumed.steps[0].action == "List Files"
        await wait_for(pilot, lambda: resumed.run.meta.status == "finished")
    assert resumed.run.steps()[-1].action == "Final Answer"


async def test_a_run_by_hand_is_scored_when_the_person_gives_the_final_answer(human_app, tmp_path):
    from tests.tui.conftest import opened_run

    async with human_app.run_test(size=SIZE) as pilot:
        screen = await opened_run(human_app, pilot)
        screen.human_step("Execute Script", {"script_name": "train.py"})
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        screen.human_step("Final Answer", {"final_answer": "sum of data.txt"})
        score = screen.run.path / "score.json"
        await wait_for(pilot, lambda: score.exists())
    assert Score.model_validate(json.loads(score.read_text())).value == 6
