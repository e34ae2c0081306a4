"""The programs scoring sends into a sandbox, called in this process: the trusted runner and its
child, the submission phase's runner, an interactive task's oracle, the ``/tmp`` sweep.

The whole-path tests (``test_scoring.py``, ``test_tamper.py``, ``test_interactive_submission.py``)
run them in real sandboxes; these pin each function's contract, fast, and hold the modules to
the standard library (a sandbox has nothing of labcoat's to import).
"""

from __future__ import annotations

import ast
import io
import json
import socket
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from environments.in_sandbox import (
    channel,
    eval_child,
    eval_runner,
    oracle_runner,
    produce_runner,
    source,
)

MODULES = [eval_child, eval_runner, oracle_runner, produce_runner]
COPIED_IN = {"labcoat_channel"}  # environments/in_sandbox/channel.py, copied into the sandbox by the host


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_each_program_imports_only_the_standard_library(module):
    tree = ast.parse(source(module))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    assert names - set(sys.stdlib_module_names) - COPIED_IN == set()
    assert "if __name__ == \"__main__\":" in source(module)  # sent as source, run as a script


def _eval_py(folder: Path, body: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "eval.py").write_text(textwrap.dedent(body))
    return str(folder)


SCORES = """
    import os
    def score(folder):
        return float(open(os.path.join(folder, "v.txt")).read())
    def broken(folder):
        raise RuntimeError("the task's bug")
"""


def test_the_child_reports_a_value_a_missing_submission_and_an_error(tmp_path):
    scripts = _eval_py(tmp_path / "scripts", SCORES)
    out = tmp_path / "out"
    out.mkdir()
    assert eval_child.report(scripts, str(out), "score", each=False).keys() == {"no_submission"}
    (out / "v.txt").write_text("0.5")
    assert eval_child.report(scripts, str(out), "score", each=False) == {"value": 0.5}
    assert eval_child.report(scripts, str(out), "broken", each=False) == {
        "error": "RuntimeError: the task's bug"}
    assert eval_child.report(scripts, str(out), "nothing", each=False) == {
        "error": "AttributeError: eval.py defines no nothing()"}


def test_the_child_asks_every_repeat_for_one_value(tmp_path):
    scripts = _eval_py(tmp_path / "scripts", SCORES)
    outputs = tmp_path / "outputs"
    for rep, value in (("rep00", "2"), ("rep01", "2")):
        (outputs / rep).mkdir(parents=True)
        (outputs / rep / "v.txt").write_text(value)
    assert eval_child.report(scripts, str(outputs), "score", each=True) == {"value": 2.0}
    (outputs / "rep01" / "v.txt").write_text("3")
    assert "over the repeats, not one value" in eval_child.report(scripts, str(outputs), "score", True)["error"]
    assert "error" in eval_child.report(scripts, str(tmp_path / "scripts"), "score", True)  # no repeats


def test_the_runner_hands_the_childs_report_back_tagged_with_the_nonce(tmp_path):
    scripts = _eval_py(tmp_path / "scripts", SCORES)
    out = tmp_path / "out"
    out.mkdir()
    (out / "v.txt").write_text("0.25")
    raw, code = eval_runner.run_child(source(eval_child), scripts, str(out), "score", "0")
    assert code == 0 and eval_runner.parse_report(raw) == {"value": 0.25}
    line = eval_runner.result_line("n0nce", eval_runner.parse_report(raw), code)
    assert line.splitlines()[-1] == 'LABCOAT_RESULT n0nce {"value": 0.25, "exit": 0}'


@pytest.mark.parametrize("raw", [b"", b"\xff\xfe", b"not json\n", b"[1, 2]\n", b'{"value": 1'])
def test_a_child_that_died_before_reporting_gives_an_error_report(raw):
    assert eval_runner.parse_report(raw) == {"error": "the evaluation child gave no report"}


def test_the_runners_main_reads_the_nonce_only_after_the_child_is_gone(tmp_path, monkeypatch):
    scripts = _eval_py(tmp_path / "scripts", SCORES)
    out = tmp_path / "out"
    out.mkdir()
    (out / "v.txt").write_text("1")
    read_after: list[bool] = []
    real = eval_runner.run_child

    def run_child(*args):
        result = real(*args)
        read_after.append(stdin.tell() == 0)  # nothing of stdin read while the child ran
        return result

    monkeypatch.setattr(eval_runner, "make_undumpable", lambda: None)  # not this test process
    monkeypatch.setattr(eval_runner, "run_child", run_child)
    stdin, stdout = io.StringIO("secret\n"), io.StringIO()
    eval_runner.main([scripts, str(out), "score", source(eval_child), "0"], stdin, stdout)
    assert read_after == [True]
    tag, nonce, report = stdout.getvalue().strip().split(" ", 2)
    assert (tag, nonce, json.loads(report)) == ("LABCOAT_RESULT", "secret", {"value": 1.0, "exit": 0})


PRODUCE = """
    def produce(workspace, here, out):
        (out / "copy.txt").write_text((workspace / "model.txt").read_text())
"""


def test_the_submission_runner_exits_by_how_produce_went(tmp_path):
    here, workspace, out = tmp_path / "here", tmp_path / "ws", tmp_path / "out"
    for folder in (here, workspace, out):
        folder.mkdir()
    (here / "produce.py").write_text(textwrap.dedent(PRODUCE))
    args = (str(here), str(workspace), str(out))
    assert produce_runner.produce(*args) == produce_runner.NO_SUBMISSION_EXIT  # no model.txt
    (workspace / "model.txt").write_text("weights")
    assert produce_runner.produce(*args) == 0 and (out / "copy.txt").read_text() == "weights"
    (here / "produce.py").write_text("def produce(workspace, here, out):\n    raise SystemExit(0)\n")
    assert produce_runner.produce(*args) == produce_runner.FAILED_EXIT  # no way to exit 0 early


def test_the_oracle_answers_refuses_with_the_tasks_words_and_stops_at_end():
    def answer(op, arrays):
        if op != "double":
            raise ValueError(f"no such op {op!r}")
        return {"y": arrays["x"] * 2}

    host, oracle_end = socket.socketpair()
    served: list[int] = []
    thread = threading.Thread(target=lambda: served.append(
        oracle_runner.serve(oracle_end, answer, channel, 1 << 20, 10.0)), daemon=True)
    thread.start()
    try:
        ask = channel.OracleClient(host, 1 << 20, 10.0)
        assert ask("double", x=np.arange(3))["y"].tolist() == [0, 2, 4]
        with pytest.raises(RuntimeError, match="no such op 'halve'"):
            ask("halve", x=np.arange(3))
        channel.send_frame(host, {"kind": "end"})
        thread.join(10)
    finally:
        host.close()
        oracle_end.close()
    assert served == [2]
