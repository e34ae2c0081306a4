"""Actor text is never Rich markup: what a person approves is exactly what runs.

An agent proposes code full of square brackets (``[/INST]`` would crash a markup parser,
``[batch]``, ``[val_idx]`` and ``[bold]`` would silently vanish from it). Every place that
shows it, the confirm panel, the step list, the step detail, the workspace tree, forms and
the status line, must show the characters as they are.
"""

from __future__ import annotations

import json

from environments.record.runs import RunDir
from tests.tui.conftest import SIZE, click, settle, wait_for
from tests.tui.test_agent_mode import react, scripted_session
from tui.app import LabcoatApp
from tui.screens.run import RunScreen
from tui.widgets.code_view import CodeView

CODE = "x = data[batch][val_idx]  # [bold]not bold[/bold] [/INST]\nprint(x)\n"
TRICKY = ["[/INST]", "[batch]", "[val_idx]", "[bold]not bold[/bold]"]


def _shown(widget) -> str:
    """The characters a widget puts on screen (markup already interpreted, if any)."""
    if isinstance(widget, CodeView):
        return widget.text
    return str(widget.render())


async def test_a_proposal_full_of_brackets_is_shown_and_recorded_literally(tmp_path):
    replies = "\n---8<---\n".join([
        react("write [it]", "Write File", json.dumps({"file_name": "train.py", "content": CODE})),
        react("done [/INST]", "Final Answer", json.dumps({"final_answer": "[bold]done[/bold]"})),
    ])
    session = scripted_session(tmp_path, replies, confirm=True)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local",
                     first_screen=lambda: RunScreen(session.run, agent=session))
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.pending is not None)
        await pilot.pause()
        body = _shown(screen.query_one("#confirm-body"))
        for text in TRICKY:
            assert text in body, f"{text!r} not shown literally in the proposal"
        await click(pilot, "#confirm-accept")
        await wait_for(pilot, lambda: session.pending is not None
                       and session.pending.action == "Final Answer")
        await pilot.pause()
        assert "[bold]done[/bold]" in _shown(screen.query_one("#confirm-body"))
        detail = _shown(screen.query_one("#detail-text"))
        for text in TRICKY:
            assert text in detail, f"{text!r} not shown literally in the step detail"
        await click(pilot, "#confirm-accept")
        await wait_for(pilot, lambda: session.run.meta.status == "finished")
    assert (session.run.workspace / "train.py").read_text() == CODE
    assert RunDir.open(session.run.path).meta.final_answer == "[bold]done[/bold]"


async def test_a_bracketed_file_name_in_the_workspace_tree(app, tmp_path):
    """A file named with brackets is listed in the workspace tree by its name."""
    from tests.conftest import write_task
    from tests.tui.test_human_mode import submit

    task = write_task(tmp_path / "tiny")  # quitting scores the run: a task that scores at once
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.start_human(str(task))
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await submit(app, pilot, "Write File", file_name="data[val_idx].py", content=CODE)
        tree = screen.query_one("#ws-tree")
        labels = [str(node.label) for node in tree.root.children]
        assert "data[val_idx].py" in labels
        assert len(screen.steps) == 1
