"""``labcoat report --tree RUN_DIR``: a real tree search's nodes on the command line (every
node, its parent, op, status and metric, the best marked), the same as ``tree_of`` in
``--json`` and Markdown, the model's plan kept as text on one line, and clear errors for a
run without a tree, a broken or hostile run folder, and options that do not go with it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.models import make_model
from agent.runner import Budgets, create_run, drive
from agent.tree.agent import TreeAgent
from agent.tree.policy import PolicySettings
from agent.tree.settings import TreeSettings
from agent.tree.view import tree_of
from environments.record.runs import RunDir
from tests.agent.helpers import write_replies
from tests.conftest import write_task
from tests.tui.conftest import make_demo_runs
from tui.cli import app, common

# the model's words: markup-looking, an unmatched closing tag, a terminal escape, a newline
HOSTILE_PLAN = "start [bold]loud[/bold] [/oops]\x1b[31m red\nsecond line"
LONG_PLAN = "tune " * 60


def writes(value: int) -> str:
    return f"open('result.txt', 'w').write('{value}')\nprint('validation total {value}')\n"


def reply(plan: str, code: str) -> str:
    return f"{plan}\n\n```python\n{code.rstrip()}\n```"


@pytest.fixture(scope="module")
def tree_run(tmp_path_factory) -> RunDir:
    """A real tree search (scripted model, local sandbox): node 1 fails, node 2 debugs it (50),
    node 3 improves node 2 (70, the best)."""
    tmp = tmp_path_factory.mktemp("tree")
    task = write_task(tmp / "tiny")
    model = write_replies(tmp / "r.txt", [reply(HOSTILE_PLAN, "raise RuntimeError('no data')\n"),
                                          reply("fix it", writes(50)), reply(LONG_PLAN, writes(70))])
    actor = TreeAgent(make_model(model), TreeSettings(policy=PolicySettings(num_drafts=1, debug_prob=1.0)))
    run, spec = create_run(task, actor, tmp / "runs", sandbox="local", model=model, agent="tree",
                           budgets=Budgets(max_steps=8))
    assert drive(run, spec, actor).status == "finished"
    return RunDir.open(run.path)


@pytest.fixture
def at80(monkeypatch) -> CliRunner:
    monkeypatch.setattr(common.console, "_width", 80)
    return CliRunner()


def report(runner: CliRunner, *args: str):
    """``labcoat report tree RUN_DIR ...`` (the tests name the run ``--tree RUN_DIR``, the
    spelling from before the subcommands, which still works: see the refusal test)."""
    if args[:1] == ("--tree",):
        args = ("tree", *args[1:])
    return runner.invoke(app, ["report", *args])


def said(res) -> str:
    """The output with the terminal's line folding undone (error lines wrap at its width)."""
    return " ".join(res.output.split())


def rows_of(output: str) -> dict[str, list[str]]:
    """The table's node rows by node id (a row starts with its id)."""
    return {line.split()[0]: line.split() for line in output.splitlines()
            if line.split() and line.split()[0].isdigit()}


def test_the_table_shows_every_node_and_marks_the_best(tree_run, at80):
    res = report(at80, "--tree", str(tree_run.path))
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert not [line for line in lines if len(line) > 80]
    assert "tree of tiny: 3 nodes · total, higher is better" in lines[0]
    rows = rows_of(res.output)
    assert set(rows) == {"1", "2", "3"}
    assert rows["1"][:4] == ["1", "draft", "buggy", "failed"]
    assert rows["2"][:5] == ["2", "1", "debug", "ok", "50"]
    assert rows["3"][:7] == ["3", "2", "improve", "ok", "70", "(printed)", "★"]
    assert [r for r in rows.values() if "★" in r] == [rows["3"]]  # one best
    assert lines[-2] == "best: node 3 (improve, total 70 (printed)) · script train.py"
    assert lines[-1].startswith("ledger: ")  # labcoat verify's verdict, in one line
    assert "--wide adds: seconds" in res.output


def test_plans_are_one_line_of_text_never_markup_or_escapes(tree_run, at80):
    res = report(at80, "--tree", str(tree_run.path))
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output
    assert "start [bold]loud" in " ".join(rows_of(res.output)["1"])  # the brackets shown, not interpreted
    assert len(rows_of(res.output)) == 3  # each node on one line: no plan folds onto another
    long_row = next(line for line in res.output.splitlines() if line.split()[:1] == ["3"])
    assert long_row.rstrip().endswith("…") and "tune tune" in long_row  # cut, on its one line
    wide = report(CliRunner(), "--tree", str(tree_run.path), "--wide")
    assert wide.exit_code == 0 and "seconds" in said(wide) and "\x1b" not in wide.output
    first = next(line for line in wide.output.splitlines() if line.split()[1:2] == ["1"])
    assert "start [bold]loud[/bold] [/oops] [31m red second line" in first


def test_json_is_the_tree_that_tree_of_rebuilds(tree_run):
    res = report(CliRunner(), "--tree", str(tree_run.path), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    tree = tree_of(tree_run.steps(), "total", True)
    assert (out["task"], out["metric"], out["direction"]) == ("tiny", "total", "higher")
    assert out["best"] == tree.best == 3 and out["script"] == tree.script == "train.py"
    assert out["run"] == tree_run.meta.run_id
    assert [(n["node"], n["parent"], n["op"], n["metric"], n["seconds"], n["plan"])
            for n in out["nodes"]] == [
        (n.id, n.parent, n.kind, n.metric, n.seconds, n.plan) for n in tree.journal.nodes]
    assert [(n["status"], n["best"]) for n in out["nodes"]] == [
        ("buggy", False), ("ok", False), ("ok", True)]
    assert out["nodes"][0]["plan"] == HOSTILE_PLAN  # whole, for scripts
    assert out["nodes"][0]["error"] == "RuntimeError: no data"
    assert out["nodes"][2]["metric_source"] == "output"


def test_markdown_is_a_table_with_the_header_and_footer(tree_run):
    res = report(CliRunner(), "--tree", str(tree_run.path), "--markdown")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "tree of tiny: 3 nodes · total, higher is better"
    assert lines[2] == "| node | parent | op | status | total | seconds | best | plan |"
    table = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert len(table) == 3 and "| ★ |" in table[2] and "★" not in "".join(table[:2])
    assert lines[-1].startswith("best: node 3 (improve")


def test_a_run_without_a_tree_is_a_one_line_error(tmp_path):
    _, made = make_demo_runs(tmp_path)
    res = report(CliRunner(), "--tree", str(made[0].path))
    assert res.exit_code == 2
    assert "not a tree run" in said(res) and "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


@pytest.mark.parametrize("extra", [
    ["RUNS"], ["--where", "gpu=none"], ["--compare", "a", "b"], ["--plots", "PLOTS"],
    ["--family", "RUN"], ["--diff"]])
def test_other_report_options_are_refused_with_tree(tree_run, tmp_path, extra):
    args = [str(tmp_path) if a in ("RUNS", "PLOTS") else str(tree_run.path) if a == "RUN" else a
            for a in extra]
    res = CliRunner().invoke(app, ["report", "--tree", str(tree_run.path), *args])  # the old spelling
    assert res.exit_code == 2 and "give it alone" in said(res), res.output
    assert not list(tmp_path.iterdir())  # nothing written (no plots)


def _copy(run: RunDir, dest: Path) -> Path:
    return Path(shutil.copytree(run.path, dest, symlinks=True))


def test_missing_or_broken_run_folders_are_clear_errors(tree_run, tmp_path):
    runner = CliRunner()
    missing = report(runner, "--tree", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "no such run directory" in said(missing)
    (tmp_path / "empty").mkdir()
    empty = report(runner, "--tree", str(tmp_path / "empty"))
    assert empty.exit_code == 2 and "not a run directory (no run.json)" in said(empty)
    broken = _copy(tree_run, tmp_path / "broken")
    (broken / "run.json").write_text('{"run_id": ')
    res = report(runner, "--tree", str(broken))
    assert res.exit_code == 2 and "unreadable run.json" in said(res)


def test_links_and_fifos_in_the_run_folder_are_refused_not_followed(tree_run, tmp_path):
    runner = CliRunner()
    linked = _copy(tree_run, tmp_path / "linked")
    (linked / "run.json").unlink()
    (linked / "run.json").symlink_to(tree_run.path / "run.json")
    res = report(runner, "--tree", str(linked))
    assert res.exit_code == 2 and "run.json is not a regular file" in said(res)
    piped = _copy(tree_run, tmp_path / "piped")
    (piped / "trace.jsonl").unlink()
    os.mkfifo(piped / "trace.jsonl")  # reading it would block forever
    res = report(runner, "--tree", str(piped))
    assert res.exit_code == 2 and "trace.jsonl is not a regular file" in said(res)


def test_reading_a_tree_run_leaves_its_trace_as_it_was(tree_run, tmp_path):
    """A live run's last line may be mid-write: the report only reads, never trims."""
    live = _copy(tree_run, tmp_path / "live")
    with (live / "trace.jsonl").open("a") as f:
        f.write('{"index": 99, "act')
    before = (live / "trace.jsonl").read_bytes()
    res = report(CliRunner(), "--tree", str(live), "--json")
    assert res.exit_code == 0, res.output
    assert [n["node"] for n in json.loads(res.stdout)["nodes"]] == [1, 2, 3]
    assert (live / "trace.jsonl").read_bytes() == before
