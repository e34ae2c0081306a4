"""`labcoat report family --diff`: the scripts a fork changed come first, and the data they
wrote (a submission CSV, a long diff) is summarised as lines changed unless ``--full``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from environments.reports.family import MAX_SHOWN_LINES, FileDiff, WorkspaceDiff
from tui.cli import app

CSV = "".join(f"{i},{i % 7}\n" for i in range(750))


def test_code_comes_first_and_data_is_summarised_unless_full():
    csv = FileDiff(path="submission.csv", change="changed", diff="--- a\n+++ b\n-1,1\n+1,2\n",
                   added=1, removed=1)
    log = FileDiff(path="notes.md", change="added", diff="+++ b\n+tried\n", added=1)
    long = FileDiff(path="table.dat", change="changed", diff="x\n", added=MAX_SHOWN_LINES + 1)
    script = FileDiff(path="train.py", change="changed", diff="--- a/train.py\n+++ b/train.py\n+x\n", added=1)
    blob = FileDiff(path="model.pt", change="changed", note="not compared as text: 1 -> 2 bytes")
    d = WorkspaceDiff(a="orig", b="fork", files=[csv, long, blob, log, script])
    text = d.report()
    assert text[0] == ("fork vs orig: added notes.md, changed train.py, changed model.pt, "
                       "changed submission.csv, changed table.dat")
    assert text[1].startswith("+++ b\n+tried") and text[2].startswith("--- a/train.py")
    assert text[3] == "  model.pt: not compared as text: 1 -> 2 bytes"
    assert text[4] == "  submission.csv: 2 lines changed (+1 -1; --full shows the diff)"
    assert text[5].startswith(f"  table.dat: {MAX_SHOWN_LINES + 1} lines changed")
    full = d.report(full=True)
    assert full[4] == "--- a\n+++ b\n-1,1\n+1,2" and full[5] == "x"


def _jsonl(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return path


def _write(name: str, content: str) -> dict:
    return {"action": "Write File", "args": {"file_name": name, "content": content}}


def test_report_family_diff_prints_the_script_before_a_summary_of_the_csv(tiny_task, tmp_path):
    def cli(*args: str) -> str:
        res = CliRunner().invoke(app, list(args), terminal_width=80)
        assert res.exit_code == 0, res.output
        return res.output

    first = _jsonl(tmp_path / "a.jsonl", [_write("submission.csv", "id,y\n"),
                                          _write("train.py", "print(1)\n")])
    out = json.loads(cli("run", str(tiny_task), "--actions", str(first), "--sandbox", "local",
                         "--runs-dir", str(tmp_path / "runs"), "--no-score", "--json"))
    cont = _jsonl(tmp_path / "b.jsonl", [_write("submission.csv", "id,y\n" + CSV),
                                         _write("train.py", "print(2)\n")])
    cli("run", "--fork", out["run_dir"], "--at", "0", "--actions", str(cont), "--no-score", "--json")

    text = cli("report", "family", out["run_dir"], "--diff")
    assert text.index("+print(2)") < text.index("submission.csv: 750 lines changed (+750 -0")
    assert "749,0" not in text  # not one line of the CSV itself
    assert "749,0" in cli("report", "family", out["run_dir"], "--diff", "--full")
    res = CliRunner().invoke(app, ["report", "family", out["run_dir"], "--full"])
    assert res.exit_code == 2 and "give both" in res.output
