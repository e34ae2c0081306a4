"""Every parser of untrusted bytes has a size and a depth limit (Trust III, finding 10).

Python's parsers recurse: ``json.loads`` of a 60,000-deep array raises RecursionError (and
tomllib's does the same), which no caller expects. Where the bytes come from a sandbox, a
submission or a task folder, that must be the caller's own clear error: a failed submission,
a failed tool call, a :class:`TaskError`, never a crashed host.
"""

from __future__ import annotations

import json
import socket
import textwrap
import time

import pytest

from environments.in_sandbox import channel
from environments.in_sandbox.channel import ChannelError
from environments.task.spec import TaskError, load_task
from environments.untrusted.bounded import LimitError, json_depth, loads_json
from tests.conftest import write_task
from tests.environments.test_interactive_submission import (
    EVAL,
    HONEST,
    PRODUCE,
    TOML,
    _framed,
    scored,
)

DEEP = 60_000


def test_depth_is_measured_without_recursion():
    assert json_depth("[" * DEEP + "]" * DEEP) == DEEP
    assert json_depth('{"a": [1, {"b": "[[[[{{"}], "c": "\\"]"}') == 3  # brackets in strings do not count
    assert json_depth("3") == 0


@pytest.mark.parametrize("text, why", ids=["deep", "large", "invalid"], argvalues=[
    ("[" * DEEP + "]" * DEEP, "nested deeper than 64"),
    ('{"a": "' + "x" * 200_000 + '"}', "larger than 150000 bytes"),
    ("{oops", "not valid JSON"),
])
def test_loads_json_refuses_with_its_own_error(text, why):
    with pytest.raises(LimitError, match=why):
        loads_json(text, max_bytes=150_000, max_depth=64, what="a report")
    assert issubclass(LimitError, ValueError)


def test_a_deep_frame_header_is_a_channel_error():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(_framed(b"[" * DEEP))  # within the 64 KiB header cap
        with pytest.raises(ChannelError, match="nested"):
            channel.recv_frame(b, 1 << 20, time.monotonic() + 10)


@pytest.fixture
def task_root(tmp_path):
    return write_task(tmp_path / "oracle-task", toml=TOML, eval_body=EVAL, files={
        "scripts/produce.py": PRODUCE,
        "scripts/token.txt": "oracle-private-token-5d1c0e",
        "scripts/offset.txt": "41.5",
        "env/solver.py": HONEST,
    })


def test_a_60000_deep_header_fails_the_submission_cleanly(task_root, tmp_path):
    solver = f"""
        import os, socket, stat, time
        def solve(oracle):
            for name in os.listdir("/proc/self/fd"):
                fd = int(name)
                try:
                    if stat.S_ISSOCK(os.fstat(fd).st_mode):
                        os.write(fd, {_framed(b"[" * DEEP)!r})
                except OSError:
                    pass
            time.sleep(2)
            raise RuntimeError("no answer came")
    """
    result = scored(task_root, tmp_path, solver)
    assert result.value is None and result.failure == "eval_error"
    assert "refused a message" in result.public_detail and "nested" in result.public_detail


def test_a_100_mb_task_toml_is_a_task_error(tmp_path):
    root = write_task(tmp_path / "big")
    with open(root / "task.toml", "r+b") as f:  # sparse: made in no time, never read whole
        f.truncate(100 << 20)
    start = time.monotonic()
    with pytest.raises(TaskError, match=r"task.toml: larger than"):
        load_task(root)
    assert time.monotonic() - start < 10


def test_a_deeply_nested_task_toml_is_a_task_error(tmp_path):
    root = write_task(tmp_path / "deep", toml="x = " + "[" * 20_000 + "]" * 20_000 + "\n")
    with pytest.raises(TaskError, match=r"task.toml: .*nested"):
        load_task(root)


def test_huge_or_deep_json_from_a_tool_is_a_failed_action(tmp_path):
    """A method tool's report is the last line a sandboxed command printed."""
    from pydantic import BaseModel

    from environments.acting.actions import ActionFailed
    from environments.acting.tool_actions import run_tool

    class Result:
        def __init__(self, stdout):
            self.stdout, self.stderr, self.exit_code = stdout, "", 0
            self.timed_out = self.oom_killed = False
            self.seconds = 0.1

    class Sandbox:
        python = "python"

        def __init__(self, stdout):
            self.stdout = stdout

        def exec(self, argv, timeout=None, stdin=None):
            return Result(self.stdout)

    class Spec:
        name = "fake"

        def argv(self, python):
            return [python]

    class Args(BaseModel):
        pass

    class Ctx:
        class task:
            class limits:
                exec_timeout, memory_mb = 10, 100

        def __init__(self, stdout):
            self.sandbox = Sandbox(stdout)

    deep = "[" * DEEP + "]" * DEEP
    huge = json.dumps({"x": "y" * (20 << 20)})
    for stdout in (deep, huge):
        with pytest.raises(ActionFailed, match="without a report"):
            run_tool(Spec(), Ctx(stdout), Args())


def test_a_deep_report_from_the_evaluation_is_an_eval_error(tmp_path):
    """The scoring runner's line is parsed again on the host, deeper in its stack than in the
    sandbox: code in the evaluated process that writes a report nested 985 deep (which the
    sandbox's runner still parses) must fail the evaluation, not the host."""
    from environments.scoring.evaluate import evaluate

    deep = textwrap.dedent("""
        import os, sys
        def get_score(folder):
            os.write(int(sys.argv[4]), b'{"value": ' + b"[" * 985 + b"]" * 985 + b"}\\n")
            os._exit(0)
    """)
    task = load_task(write_task(tmp_path / "deep-report", eval_body=deep))
    ws = tmp_path / "ws"
    ws.mkdir()
    result = evaluate(task, ws, "local")
    assert result.value is None and result.failure == "eval_error", result


def test_task_text_files_are_capped(tmp_path):
    root = write_task(tmp_path / "long")
    with open(root / "scripts" / "research_problem.txt", "r+b") as f:
        f.truncate(100 << 20)
    with pytest.raises(TaskError, match=r"research_problem.txt: larger than"):
        load_task(root)



def test_a_deeply_nested_action_input_is_the_actors_mistake_not_a_crash():
    """From a model's reply (ReAct text) or as a JSON string (tools mode, replay files): a
    200,000-deep Action Input is a clear format error, never a RecursionError."""
    from agent.models.react_format import FormatError, parse_response
    from environments.acting.actions import ActionInputError
    from environments.acting.low_level import LOW_LEVEL_ACTIONS

    deep = "[" * 200_000 + "]" * 200_000
    with pytest.raises(FormatError, match="nests deeper"):
        parse_response(f'Thought: x\nAction: List Files\nAction Input: {{"dir_path": {deep}}}\n')
    with pytest.raises(ActionInputError, match="nested deeper"):
        next(a for a in LOW_LEVEL_ACTIONS if a.name == "List Files").validate('{"dir_path": ' + deep + "}")
