"""Untrusted text never reaches a terminal as control sequences (Trust III, finding 4 and 11).

A script's output, a file name an actor chose and a model's words can carry ESC: OSC 52 writes
the person's clipboard, OSC 0 their window title, SGR 8 hides text. Every display path shows
such characters visibly (``\\x1b``) instead, and takes any string (a lone surrogate too).
"""

from __future__ import annotations

import io
import json
import re

import pytest
from typer.testing import CliRunner

from tests.agent.helpers import react, write_replies
from tui.cli import app

OSC52 = "\x1b]52;c;aGVsbG8=\x07"   # writes "hello" to the clipboard
OSC0 = "\x1b]0;pwned\x07"          # sets the window title
SGR8 = "\x1b[8m"                   # hides what follows
C1 = "\x9b31m\x9d0;c1\x9c"         # the same through 8-bit CSI and OSC
#: a script that prints all of them (the file holds backslash escapes; Python makes them bytes)
EVIL_SCRIPT = ('print("metric\\x1b]52;c;aGVsbG8=\\x07" + "\\x1b]0;pwned\\x07" + "\\x1b[8mhidden" '
               '+ "\\x9b31m\\x9d0;c1\\x9c" + " accuracy: 0.5")\n')
EVIL_NAME = "a\x1b]0;name\x07\u202eexe.txt"

#: what rich itself writes: SGR styles, and the live display's cursor moves / line erases
RICH_OWN = re.compile(r"\x1b\[(?:[0-9;]*m|\?25[lh]|[0-9]*[ABCDGK]|2K)")


STEPS = [
    ("Write File", {"file_name": "evil.py", "content": EVIL_SCRIPT}),
    ("Execute Script", {"script_name": "evil.py"}),
    ("Write File", {"file_name": EVIL_NAME, "content": "x\n"}),
    ("Write File", {"file_name": "s.txt", "content": "\ud800"}),  # a lone surrogate
    ("Write File", {"file_name": "raw.txt", "content": "file " + OSC52 + SGR8 + "\n"}),
    ("Final Answer", {"final_answer": "done " + OSC52 + OSC0 + SGR8 + C1}),
]


def _actor_args(tmp_path, how: str) -> list[str]:
    """The hostile steps as a model's replies (``scripted/``) or a replay ``--actions`` file
    (which keeps a lone surrogate as given; the reply parser escapes it)."""
    if how == "model":
        return ["--model", write_replies(tmp_path / "r.txt", [react(a, args) for a, args in STEPS])]
    path = tmp_path / "actions.jsonl"
    path.write_text("".join(json.dumps({"action": a, "args": args}) + "\n" for a, args in STEPS))
    return ["--actions", str(path)]


@pytest.fixture
def no_keys(monkeypatch, tmp_path):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def _no_raw_controls(out: str) -> None:
    leftover = RICH_OWN.sub("", out)
    assert "\x1b" not in leftover, repr(leftover[max(0, leftover.find("\x1b") - 60):][:160])
    assert SGR8 not in out and "\x1b]" not in out
    for c in ("\x9b", "\x9d", "\x9c", "\x07", "\u202e"):
        assert c not in out, repr(c)


@pytest.mark.parametrize("how", ["model", "replay"])
def test_plain_progress_lines_show_escapes_visibly(no_keys, tiny_task, tmp_path, how):
    """``labcoat run | tee log``: the plain lines carry no control sequence, and the run ends."""
    res = CliRunner().invoke(app, ["run", str(tiny_task), *_actor_args(tmp_path, how), "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--no-score"])
    out = res.output
    assert res.exit_code == 0, out
    assert "finished: final answer" in out, out
    _no_raw_controls(out)
    assert "\\x1b]52;c;aGVsbG8=\\x07" in out  # shown, visibly
    assert "\\x1b]0;name\\x07\\u202eexe.txt" in out
    assert "s.txt: 1 line" in out  # a write's line says its size, not its content


@pytest.mark.parametrize("how", ["model", "replay"])
def test_live_panel_shows_escapes_visibly(no_keys, tiny_task, tmp_path, monkeypatch, how):
    """On a terminal (rich's live panel) only rich's own sequences reach the output."""
    from tui.cli import common, run

    buf = io.StringIO()
    live = common.make_console(file=buf, force_terminal=True, width=160)
    monkeypatch.setattr(run, "console", live)
    res = CliRunner().invoke(app, ["run", str(tiny_task), *_actor_args(tmp_path, how), "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--no-score"])
    out = buf.getvalue()
    assert res.exit_code == 0, res.output + out
    assert "finished: final answer" in out
    _no_raw_controls(out)
    assert "\\x1b]52;c;aGVsbG8=\\x07" in out


@pytest.mark.parametrize("how", ["model", "replay"])
def test_live_panel_without_colour_writes_no_style_at_all(no_keys, tiny_task, tmp_path, monkeypatch, how):
    """With no colour system rich writes no SGR: every ESC left is the live display's cursor."""
    from tui.cli import common, run

    buf = io.StringIO()
    monkeypatch.setattr(run, "console", common.make_console(file=buf, force_terminal=True, width=160,
                                                            color_system=None))
    res = CliRunner().invoke(app, ["run", str(tiny_task), *_actor_args(tmp_path, how), "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--no-score"])
    out = buf.getvalue()
    assert res.exit_code == 0, res.output + out
    cursor_only = re.sub(r"\x1b\[(?:\?25[lh]|[0-9]*[ABCDGK])", "", out)
    assert "\x1b" not in cursor_only, repr(cursor_only[cursor_only.find("\x1b") - 60:][:160])
    assert "\\x1b]52;c;aGVsbG8=\\x07" in out


# ---- the sanitiser itself -------------------------------------------------------------------

@pytest.mark.parametrize("raw,shown", [
    (OSC52, "\\x1b]52;c;aGVsbG8=\\x07"),
    (OSC0, "\\x1b]0;pwned\\x07"),
    (SGR8 + "x", "\\x1b[8mx"),
    ("\x9b31m\x9d0;t\x9c", "\\x9b31m\\x9d0;t\\x9c"),
    ("a\rb\x00c\x7fd\x08", "a\\x0db\\x00c\\x7fd\\x08"),
    ("\u202eevil\u2066\u2069", "\\u202eevil\\u2066\\u2069"),
    ("\ud800 and \udfff", "\\ud800 and \\udfff"),
    ("line\n\tindented [bold]x[/] é 漢 ✓", "line\n\tindented [bold]x[/] é 漢 ✓"),
])
def test_visible_writes_out_every_control_character(raw, shown):
    from tui.terminal_text import visible

    assert visible(raw) == shown
    visible(raw).encode("utf-8")  # always encodable


def test_visible_leaves_no_character_a_terminal_obeys():
    from tui.terminal_text import visible

    every = "".join(chr(c) for c in range(0x110000))
    out = visible(every)
    out.encode("utf-8")
    bad = {c for c in out if ord(c) < 0x20 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f
           or 0x202a <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069}
    assert not bad
    clean = "x = data[batch]  # ok\n" * 10_000
    assert visible(clean) is clean  # the common case costs one scan, no copy


def test_a_safe_console_shows_control_characters_and_keeps_its_own_styles():
    from rich.segment import Segment, Segments
    from rich.text import Text

    from tui.cli.common import make_console

    buf = io.StringIO()
    con = make_console(file=buf, force_terminal=True, color_system="standard", width=80)
    con.print(Text("red", "red"), Segments([Segment(OSC52)]), Text("x" + OSC0, "bold"))
    out = buf.getvalue()  # (rich's Text drops the BEL itself; a bare segment keeps it)
    assert "\x1b[31mred\x1b[0m" in out and "\x1b[1mx\\x1b]0;pwned\x1b[0m" in out
    assert "\\x1b]52;c;aGVsbG8=\\x07" in out and "\x1b]" not in out


def test_errors_quote_paths_and_messages_as_plain_text(no_keys, tmp_path, monkeypatch):
    """``fail``: a task folder with ESC in its name is shown visibly; brackets are characters
    (the llama.cpp hint's ``pip install "labcoat[local]"`` kept its ``[local]``)."""
    import typer

    from agent.models.llamacpp_model import INSTALL
    from tui.cli import common

    res = CliRunner().invoke(app, ["run", str(tmp_path / "no\x1b]0;x\x07[bold]such"), "--sandbox", "local"])
    assert res.exit_code == 2
    assert "\x1b" not in res.output and "no\\x1b]0;x\\x07[bold]such" in res.output.replace("\n", "")
    buf = io.StringIO()
    monkeypatch.setattr(common, "err_console", common.make_console(file=buf, width=300))
    with pytest.raises(typer.Exit):
        common.fail(f"llamacpp models need llama-cpp-python: {INSTALL}")
    assert 'pip install "labcoat[local]"' in buf.getvalue()


def test_reports_show_hostile_task_names_visibly(no_keys, tmp_path):
    """Task names come from folders: the report's table and Markdown show them, never obey them."""
    from tests.conftest import write_task

    task = write_task(tmp_path / "t\x1b]0;x\x07[red]k", files={"reference/train.py": "print(1)\n"})
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"action": "Final Answer", "args": {"final_answer": "x"}}) + "\n")
    res = CliRunner().invoke(app, ["run", str(task), "--actions", str(path), "--sandbox", "local",
                                   "--runs-dir", str(tmp_path / "runs"), "--no-score"])
    assert res.exit_code == 0, res.output
    for args in ([], ["--markdown"], ["--wide"]):
        out = CliRunner().invoke(app, ["report", str(tmp_path / "runs"), *args]).output
        assert "\x1b" not in out, (args, out)
        assert "t\\x1b]0;x\\x07[red]k" in out.replace("\n", ""), (args, out)


def test_tools_table_is_plain_text():
    out = CliRunner().invoke(app, ["tools"]).output
    assert "\x1b" not in out and "method tools" in out


# ---- the Textual workbench ------------------------------------------------------------------

def _screen_output(app) -> str:
    """What the driver would write for the whole screen now (Textual's own sequences included)."""
    update = app.screen._compositor.render_update(full=True)
    return update.render_segments(app.console)


async def test_the_workbench_shows_escapes_visibly(no_keys, tiny_task, tmp_path):
    """Textual writes ESC in a widget's text to the terminal as it is (checked: Static, Log,
    TextArea, Tree, Content and Text alike), so the run view's step list, step detail, status
    line, workspace tree, code viewer and diff show the run's text through ``visible``."""
    from textual.widgets import TabbedContent

    from environments.record.runs import RunDir
    from tests.tui.conftest import SIZE
    from tui.app import LabcoatApp
    from tui.screens.run import RunScreen

    res = CliRunner().invoke(app, ["run", str(tiny_task), *_actor_args(tmp_path, "replay"),
                                   "--sandbox", "local", "--runs-dir", str(tmp_path / "runs"),
                                   "--no-score"])
    assert res.exit_code == 0, res.output
    run = RunDir.open(next((tmp_path / "runs").iterdir()))
    tui = LabcoatApp(runs_dir=run.path.parent, sandbox="local", first_screen=lambda: RunScreen(run))
    seen = []
    async with tui.run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await pilot.press("g")
        for _ in range(len(STEPS)):
            for tab in ("tab-workspace", "tab-diff"):
                screen.query_one("#side", TabbedContent).active = tab
                await pilot.pause()
                seen.append(_screen_output(pilot.app))
            await pilot.press("l")
    out = "".join(seen)
    assert "\x1b]" not in out and SGR8 not in out
    for c in ("\x9b", "\x9d", "\x07", "\u202e"):
        assert c not in out, repr(c)
    for shown in ("\\x1b]52;c;aGVsbG8=\\x07", "\\x1b]0;name\\x07", "\\x1b[8m"):
        assert shown in out, shown
