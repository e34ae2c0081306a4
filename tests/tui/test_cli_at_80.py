"""The command line at 80 columns says what happened (#27.4, 6, 7): whole headers and names,
a compact tools list, unbroken lines in a pipe, readable metavars, progress lines that name
the change and its number, scores with their interval, typos found before anything starts."""

from __future__ import annotations

import io
import re

import pytest
from rich.text import Text
from typer.testing import CliRunner

from environments.record.runs import Step
from environments.scoring.score import Score
from sandbox.base import Isolation
from tui.cli import app, common
from tui.cli import sandbox as sandbox_cli
from tui.cli.common import Col, fitted_table, make_console
from tui.cli.display import change_gist, step_summary

AT80 = {"env": {"COLUMNS": "80"}, "terminal_width": 80}


def invoke(args: list[str]):
    return CliRunner().invoke(app, args, **AT80)


def _fits(text: str, width: int = 80) -> None:
    long = [line for line in text.splitlines() if len(line) > width]
    assert not long, long


def _isolation(name: str, on: bool) -> Isolation:
    return Isolation(backend=name, available=True, filesystem=on, network=on, memory=True, cpu=True,
                     pids=True, process_tree_kill=True, unprivileged_user=on, detail=f"{name} detail")


@pytest.fixture
def fake_backends(monkeypatch):
    """``sandbox check`` without asking Docker or bubblewrap: the table is what is tested."""
    monkeypatch.setattr(sandbox_cli, "check_all", lambda: [_isolation("local", True),
                                                           _isolation("docker", True),
                                                           _isolation("none", False)])
    monkeypatch.setattr(sandbox_cli, "_engine_and_image",
                        lambda: {"engine": None, "engine_error": "no engine in this test", "image": None})
    monkeypatch.setattr(sandbox_cli, "_auto", lambda: "local")


def test_sandbox_check_at_80_columns_cuts_no_header(fake_backends):
    result = invoke(["sandbox", "check", "--no-probe"])
    assert result.exit_code == 0, result.output
    _fits(result.output)
    assert "…" not in result.output  # was "availa…", "non-r…"
    header = next(line for line in result.output.splitlines() if line.strip().startswith("backend")).split()
    assert header[:2] == ["backend", "avail"] and "non-root" in header
    for name in ("local", "docker", "none"):
        assert any(line.split()[:1] == [name] for line in result.output.splitlines())
    wide = invoke(["sandbox", "check", "--no-probe", "--wide"]).output
    assert "available" in wide and "tree kill" in wide


def test_tools_has_a_compact_form_and_a_wide_one():
    import json

    result = invoke(["tools"])
    assert result.exit_code == 0, result.output
    _fits(result.output)
    names = [t["name"] for t in json.loads(invoke(["tools", "--json"]).output)]
    assert len(result.output.splitlines()) <= len(names) + 8  # one line a tool (was 255 lines)
    for name in names:
        assert re.search(rf"^\W*{re.escape(name)}\s", result.output, re.M), name
    assert "--wide adds: command" in result.output
    wide = invoke(["tools", "--wide"]).output
    assert "python -m methods." in wide


def test_a_header_wraps_between_its_words_never_inside_one():
    cols = [Col("model", key=True), Col("mean improvement"), Col("success"), Col("normalized score")]
    rows = [["scripted/demo.txt", "+600.0%", "100% (1/1)", "0.53"]]
    def shown(width: int) -> str:
        table, _ = fitted_table("t", cols, rows, width=width)
        out = make_console(width=width, record=True, file=io.StringIO())
        out.print(table)
        return out.export_text()

    text = shown(58)  # every column at its longest word: each header whole, on two lines at most
    for word in ("improvement", "success", "normalized", "scripted/demo.txt"):
        assert word in text, text
    _fits(text, 58)
    narrow = shown(44)  # too narrow for all: the rightmost are left out, and said to be
    assert "improvement" in narrow and "scripted/demo.txt" in narrow and "0.53" not in narrow
    assert "--wide adds: success, normalized score" in " ".join(narrow.split())


def test_a_short_header_stands_in_only_when_the_table_is_too_wide():
    cols = [Col("name", key=True), Col("available", short="avail")]
    assert fitted_table("t", cols, [["x", "yes"]], width=80)[0].columns[1].header.plain == "available"
    narrow = fitted_table("t", cols, [["x", "yes"]], width=16)[0]
    assert narrow.columns[1].header.plain == "avail"


def test_text_in_a_pipe_is_not_broken_at_80_columns():
    result = invoke(["run", "digit", "--sandbox", "local"])
    line = next(line for line in result.output.splitlines() if line.startswith("error:"))
    assert len(line) > 80 and line.endswith("(labcoat tasks lists the suite)")


def test_a_misspelled_task_names_the_one_meant(tmp_path):
    result = invoke(["run", "digit", "--sandbox", "local", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and "did you mean digits?" in result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("command", [["run"], ["score"], ["baseline"], ["check-task"], ["batch"],
                                     ["report", "runs"], ["uplift"], ["tui"], ["tasks"], ["tools"],
                                     ["sandbox", "check"], ["sandbox", "build"], []])
def test_no_flag_shows_a_bare_type_for_its_value(command):
    result = invoke([*command, "--help"])
    assert result.exit_code == 0, result.output
    flags = [line for line in result.output.splitlines() if re.match(r"│ +-", line)]
    assert flags and not [f for f in flags if re.search(r"<\w+>", f)], flags


def test_flags_show_what_their_value_is():
    out = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}, terminal_width=200).output
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("│ --")}
    assert "--no-score" in rows["--score"] and "<bool>" not in rows["--score"]
    assert "SECONDS" in rows["--max-time"] and "USD" in rows["--max-cost"]
    assert "PROVIDER/MODEL" in rows["--model"] and "react|tools" in rows["--mode"]
    assert "BACKEND" in rows["--sandbox"] and re.search(r"--max-steps\s+N\s", rows["--max-steps"])


@pytest.mark.parametrize("args", [["batch", "--tasks", "digit", "--dir", "x"],
                                  ["batch", "--tasks", "digit", "--batch-dir", "x"],
                                  ["uplift", "digit", "--dir", "x"],
                                  ["uplift", "digit", "--batch-dir", "x"]])
def test_batch_and_uplift_take_both_folder_spellings(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke([*args, "--sandbox", "local"])
    assert result.exit_code == 2 and "did you mean digits?" in result.output, result.output
    assert "No such option" not in result.output and not (tmp_path / "x").exists()


def _step(action: str, args, observation: str = "ok", **kw) -> Step:
    return Step(index=2, actor="agent", action=action, args=args, observation=observation, **kw)


def test_a_write_says_which_values_changed():
    before = "import x\nEPOCHS = 12\nLR = 0.1  # rate\nnet = MLP(hidden=64, depth=2)\nprint(1)\n"
    after = "import x\nEPOCHS = 30\nLR = 0.01  # rate\nnet = MLP(hidden=128, depth=2)\nprint(1)\n"
    write = _step("Write File", {"file_name": "train.py", "content": after})
    assert step_summary(write, before=before) == "train.py: EPOCHS 12 → 30, LR 0.1 → 0.01, hidden 64 → 128"
    assert step_summary(write, width=40, before=before) == "train.py: EPOCHS 12 → 30 (+2 more)"
    assert step_summary(write, before=after) == "train.py: rewritten unchanged"
    assert step_summary(write).startswith("train.py: 5 lines")  # the old file not known: its size
    assert change_gist(["a = 1"], ["a = 1", "b = 2"]) == ["b = 2"]


def test_an_edit_says_which_values_changed():
    diff = "The edited file is saved. Diff:\n--- a\n+++ b\n@@ -1,2 +1,2 @@\n-EPOCHS = 12\n+EPOCHS = 30\n x\n"
    assert step_summary(_step("Edit Script (AI)", {"script_name": "train.py"}, diff)) == "train.py: EPOCHS 12 → 30"


def test_a_script_run_says_its_validation_number():
    out = ("The script has been executed. Here is the output:\nepoch 1 train loss: 0.3\n"
           "validation accuracy: 0.91\ntest acc: 0.5\n")
    assert step_summary(_step("Execute Script", {"script_name": "t.py"}, out, exit_code=0)) == \
        "validation accuracy: 0.91"


def test_a_tree_step_names_its_node_and_operator():
    tag = {"tree": {"node": 3, "parent": 1, "op": "improve"}}
    out = "The script has been executed. Here is the output:\nvalidation accuracy: 0.93\n"
    line = step_summary(_step("Execute Script", {"script_name": "solve.py"}, out, exit_code=0, meta=tag))
    assert line == "node 3 improve of 1: validation accuracy: 0.93"
    draft = {"tree": {"node": 1, "parent": None, "op": "draft"}}
    assert step_summary(_step("Execute Script", {}, out, exit_code=0, meta=draft)).startswith("node 1 draft: ")


def _score(**kw) -> Score:
    base = dict(task="t", metric="seconds", direction="lower", value=0.9, baseline=1.0, improvement=0.082,
                success=False, threshold=0.1)
    return Score(**{**base, **kw})


def test_a_score_line_shows_its_interval(capsys):
    common.print_score(_score(interval=(-0.031, 0.195)))
    out = " ".join(capsys.readouterr().out.split())
    assert "improvement +8.2% [95% CI -3.1%, +19.5%]" in out
    common.print_score(_score())
    assert "CI" not in capsys.readouterr().out


def test_plain_console_lines_are_whole_but_tables_fit():
    buffer = io.StringIO()
    out = make_console(file=buffer, width=40)
    out.print(Text("word " * 30))
    table, _ = fitted_table("t", [Col("a"), Col("b")], [["x " * 30, "y"]], width=40)
    out.print(table)
    lines = buffer.getvalue().splitlines()
    assert lines[0].strip() == ("word " * 30).strip()
    assert all(len(line) <= 40 for line in lines[1:])
