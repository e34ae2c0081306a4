"""Every command a hint prints works as printed: `batch`'s last line, `import mlab`'s, the `report
tree` error's, and docs/mlagentbench.md's example are each run through the CLI (issue 42.8: they
still named `labcoat report DIR`, which is now `labcoat report runs DIR`)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from tests.environments.test_mlab_import import good_steps, make_log, make_task
from tui.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _runs_hint(command: str) -> None:
    """``command`` (a `labcoat ...` line) runs, with exit code 0, as the spelling of today."""
    argv = shlex.split(command)
    assert argv[0] == "labcoat", command
    res = CliRunner().invoke(app, argv[1:])
    assert res.exit_code == 0, (command, res.output)
    assert "now spelled" not in res.output, (command, res.output)  # an old spelling, still taken


def test_the_batch_s_report_hint_and_the_tree_error_s_hint_run(tiny_task, tmp_path):
    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"action": "Final Answer", "args": {"final_answer": "x"}}) + "\n")
    res = CliRunner().invoke(app, ["batch", "--tasks", str(tiny_task), "--agent", "replay", "--actions",
                                   str(actions), "--sandbox", "local", "--dir", str(tmp_path / "b"), "--no-score"])
    assert res.exit_code == 0, res.output
    last = res.output.strip().splitlines()[-1]
    assert last.startswith("report: "), res.output
    _runs_hint(last.removeprefix("report: "))

    (run,) = [p.parent for p in (tmp_path / "b").rglob("run.json")]
    tree = CliRunner().invoke(app, ["report", "tree", str(run)])
    said = " ".join(tree.output.split())
    assert tree.exit_code != 0 and "not a tree run" in said, tree.output
    hint = re.search(r"(labcoat report \S+ RUNS_DIR)", said)
    assert hint, said
    _runs_hint(hint.group(1).replace("RUNS_DIR", str(tmp_path / "b")))


def test_the_import_hint_and_the_docs_example_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = make_task(tmp_path)
    log = make_log(tmp_path / "final_exp_logs", good_steps([1, 2, 3]))
    res = CliRunner().invoke(app, ["import", "mlab", str(log), "--task", str(task), "--runs-dir", "mlab-runs",
                                   "--sandbox", "local"])
    assert res.exit_code == 0, res.output
    hint = re.search(r"\(or (labcoat report [^)]*)\)", " ".join(res.output.split()))
    assert hint, res.output
    _runs_hint(hint.group(1))

    doc = (ROOT / "docs" / "mlagentbench.md").read_text()
    block = doc.split("labcoat import mlab final_exp_logs/")[1].split("```")[0]
    reports = [line.split("#")[0].strip() for line in block.splitlines() if line.startswith("labcoat report")]
    assert reports, block
    for command in reports:  # the docs' example, over the folder the docs' import wrote
        _runs_hint(command)
