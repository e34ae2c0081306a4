"""The interactive contract (``[oracle]``): a submission questions the task's oracle through the
host's checked relay, and nothing else of the trusted side.

Each hostile case is a submission that would fake or break the score if the relay trusted it:
flooding the channel, huge or malformed messages, never answering, spraying reports over its
inherited descriptors, a daemon that talks after the end, and snooping for the oracle's
secrets. The synthetic task: the oracle adds a secret offset to what it is asked; the score is
1 when the outputs hold ``arange(4) + offset``, which only asking can give.
"""

from __future__ import annotations

import socket
import textwrap
import time
from pathlib import Path

import pytest

from environments.in_sandbox import channel
from environments.in_sandbox.channel import ChannelError
from environments.scoring.evaluate import evaluate
from environments.task.spec import TaskError, load_task
from tests.conftest import write_task
from tests.sandbox.backends import docker_marks

TOKEN = "oracle-private-token-5d1c0e"  # read by the oracle, never sent

EVAL = textwrap.dedent(f"""
    import time
    from pathlib import Path
    import numpy as np
    from methods._submission import load_outputs
    HERE = Path(__file__).parent
    def _offset():
        assert (HERE / "token.txt").read_text() == "{TOKEN}"
        return float((HERE / "offset.txt").read_text())
    def make_oracle(challenge):
        offset = _offset()
        def answer(op, arrays):
            if op == "hang":
                time.sleep(1000)
            if op != "shift" or set(arrays) != {{"x"}} or arrays["x"].shape != (4,):
                raise ValueError("a shift request carries x of shape (4,)")
            return {{"y": arrays["x"] + offset}}
        return answer
    def score(folder):
        y = load_outputs(folder)["y"]
        return float(np.allclose(y, np.arange(4.0) + _offset()))
""")
PRODUCE = textwrap.dedent("""
    from methods._submission import load_submission, save_outputs
    def produce(workspace, here, out, oracle):
        save_outputs(out, y=load_submission(workspace, "solver.py").solve(oracle))
""")
HONEST = textwrap.dedent("""
    import numpy as np
    def solve(oracle):
        return oracle("shift", x=np.arange(4.0))["y"]
""")
TOML = textwrap.dedent("""
    metric = "match"
    direction = "higher"
    baseline = 0.5
    [oracle]
    max_requests = 3
    max_message_mb = 0.01
    [limits]
    eval_timeout = 20
""")


BOTH = pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=docker_marks)])


@pytest.fixture
def task_root(tmp_path) -> Path:
    return write_task(tmp_path / "oracle-task", toml=TOML, eval_body=EVAL, files={
        "scripts/produce.py": PRODUCE,
        "scripts/token.txt": TOKEN,
        "scripts/offset.txt": "41.5",
        "env/solver.py": HONEST,
    })


def scored(task_root: Path, tmp_path: Path, solver: str, sandbox: str = "local"):
    task = load_task(task_root)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "solver.py").write_text(textwrap.dedent(solver))
    return evaluate(task, ws, sandbox)


@BOTH
def test_an_honest_submission_scores_through_the_oracle(task_root, tmp_path, sandbox):
    result = scored(task_root, tmp_path, HONEST, sandbox)
    assert result.failure is None, result.detail
    assert result.value == 1.0


def test_ignoring_the_oracle_scores_zero(task_root, tmp_path):
    result = scored(task_root, tmp_path, "import numpy as np\ndef solve(o):\n    return np.arange(4.0)\n")
    assert result.value == 0.0


@BOTH
def test_flooding_past_the_request_cap_fails(task_root, tmp_path, sandbox):
    flood = """
        import numpy as np
        def solve(oracle):
            for _ in range(50):
                y = oracle("shift", x=np.arange(4.0))["y"]
            return y
    """
    result = scored(task_root, tmp_path, flood, sandbox)
    assert result.value is None and result.failure == "eval_error"
    assert "more than 3 oracle requests" in result.public_detail


def test_a_huge_message_is_refused_unread(task_root, tmp_path):
    huge = """
        import numpy as np
        def solve(oracle):
            return oracle("shift", x=np.zeros(50_000_000, dtype=np.uint8))["y"]
    """
    start = time.monotonic()
    result = scored(task_root, tmp_path, huge)
    assert result.value is None and result.failure == "eval_error"
    assert "at most 10485 bytes" in result.public_detail
    assert time.monotonic() - start < 60  # refused on its header, not after reading 50 MB


def _framed(header: bytes) -> bytes:
    return len(header).to_bytes(4, "big") + header


@pytest.mark.parametrize("garbage", [
    b"\xff\xff\xff\xff" + b"x" * 64,                             # a header length past the cap
    *[pytest.param(g, marks=pytest.mark.slow) for g in (  # one scoring each (~2 s): the slow set
        _framed(b"{oops"),                                             # a header that is not JSON
        _framed(b'{"kind": "reply", "op": "x"}'),                      # a reply forged by the submission
        _framed(b'{"kind": "request", "arrays": [["x", "|O", [1]]]}'),  # an object dtype
    )],
])
def test_malformed_messages_on_the_channel_fail(task_root, tmp_path, garbage):
    solver = f"""
        import os, socket, stat, time
        def solve(oracle):
            for name in os.listdir("/proc/self/fd"):
                fd = int(name)
                try:
                    if stat.S_ISSOCK(os.fstat(fd).st_mode):
                        os.write(fd, {garbage!r})
                except OSError:
                    pass
            time.sleep(2)
            raise RuntimeError("no answer came")
    """
    result = scored(task_root, tmp_path, solver)
    assert result.value is None and result.failure == "eval_error"
    assert "refused a message" in result.public_detail, result.public_detail


def test_a_request_the_oracle_refuses_says_why(task_root, tmp_path):
    wrong = """
        import numpy as np
        def solve(oracle):
            return oracle("shift", x=np.zeros(5))["y"]
    """
    result = scored(task_root, tmp_path, wrong)
    assert result.value is None and result.failure == "eval_error"
    assert "x of shape (4,)" in result.public_detail


def test_a_submission_that_never_returns_times_out(task_root, tmp_path):
    (task_root / "task.toml").write_text(TOML.replace("eval_timeout = 20", "eval_timeout = 3"))
    result = scored(task_root, tmp_path, "import time\ndef solve(o):\n    time.sleep(1000)\n")
    assert result.failure == "timeout" and result.value is None


def test_an_oracle_that_never_answers_is_a_failure_not_a_hang(task_root, tmp_path):
    (task_root / "task.toml").write_text(TOML.replace("eval_timeout = 20", "eval_timeout = 3"))
    start = time.monotonic()
    result = scored(task_root, tmp_path, "import numpy as np\ndef solve(o):\n    return o('hang')\n")
    assert result.value is None and result.failure in ("eval_error", "timeout")
    assert time.monotonic() - start < 60


@BOTH
def test_reports_sprayed_on_inherited_descriptors_do_not_score(task_root, tmp_path, sandbox):
    spray = """
        import json, os
        import numpy as np
        def solve(oracle):
            line = ("\\n" + json.dumps({"value": 12345.0}) + "\\n").encode()
            for name in os.listdir("/proc/self/fd"):
                try:
                    if int(name) > 2:
                        os.write(int(name), line)
                except (OSError, ValueError):
                    pass
            os._exit(0)
    """
    result = scored(task_root, tmp_path, spray, sandbox)
    assert result.value is None and result.failure == "eval_error"


@BOTH
def test_a_daemon_that_talks_after_the_end_is_not_heard(task_root, tmp_path, sandbox):
    """The daemon's requests would pass the cap of 3; heard, they would fail the score."""
    daemon = """
        import os, time
        import numpy as np
        def solve(oracle):
            y = oracle("shift", x=np.arange(4.0))["y"]
            if os.fork() == 0:
                os.setsid()
                time.sleep(0.5)
                for _ in range(10):
                    oracle("shift", x=np.arange(4.0))
                os._exit(0)
            return y
    """
    result = scored(task_root, tmp_path, daemon, sandbox)
    assert result.failure is None, result.detail
    assert result.value == 1.0


@pytest.mark.slow
def test_the_oracle_secrets_are_out_of_reach(task_root, tmp_path):
    # The offset file holds "41.5": as a substring that is in some library file or other (the
    # sandbox shows the interpreter's prefix), so a file *being* the offset is what counts.
    snoop = f"""
        import glob, os
        def solve(oracle):
            token, offset = "{TOKEN[::-1]}"[::-1], "5.14"[::-1]  # not in this file's own text
            seen, looked = [], 0
            for pattern in ("/task/**", "/proc/*/environ", "/proc/*/cmdline", "/tmp/**", "/workspace/**"):
                for path in glob.glob(pattern, recursive=True):
                    try:  # the first MiB of each file: enough for any secret
                        with open(path, errors="replace") as f:
                            text = f.read(1 << 20)
                    except (OSError, ValueError):
                        continue
                    looked += 1
                    if token in text or text.strip() == offset:
                        seen.append(path)
            raise RuntimeError(f"secret seen: {{bool(seen)}} {{seen[:3]}} in {{looked}} files")
    """
    # the walk reads every file the submission can see: give it room on a loaded machine
    (task_root / "task.toml").write_text(TOML.replace("eval_timeout = 20", "eval_timeout = 300"))
    result = scored(task_root, tmp_path, snoop)
    assert result.value is None
    assert "secret seen: False [] in" in result.public_detail, result.public_detail
    assert "in 0 files" not in result.public_detail  # it did look


# ---- the wire format and the declaration (pure) --------------------------------------------

def test_headers_are_checked_before_any_payload_is_read():
    good = {"kind": "request", "op": "shift", "arrays": [["x", "<f8", [4]]]}
    assert channel.check_header(good, 1 << 10) == 32
    for bad in ({"kind": "shell"}, {"kind": "request", "arrays": [["x", "|O", [1]]]},
                {"kind": "request", "arrays": [["x", "<f8", [-1]]]},
                {"kind": "request", "arrays": [["x", "<f8", [True]]]},
                {"kind": "request", "arrays": [["x", "<f8", [1 << 40]]]}, []):
        with pytest.raises(ChannelError):
            channel.check_header(bad, 1 << 10)


def test_a_frame_round_trips_and_a_short_one_ends_in_eof():
    a, b = socket.socketpair()
    with a, b:
        channel.send_arrays(a, "request", "shift", {"x": [1.0, 2.0]})
        header, arrays = channel.recv_arrays(b, 1 << 10, 5)
        assert header["op"] == "shift" and arrays["x"].tolist() == [1.0, 2.0]
        a.sendall(b"\x00\x00")
        a.close()
        with pytest.raises(EOFError):
            channel.recv_frame(b, 1 << 10, time.monotonic() + 5)


def test_an_oracle_needs_the_submission_phase_and_make_oracle(task_root):
    toml = task_root / "task.toml"
    toml.write_text("timed = true\n" + TOML)
    with pytest.raises(TaskError, match="do not mix"):
        load_task(task_root)
    toml.write_text(TOML)
    (task_root / "scripts" / "eval.py").write_text(EVAL.replace("make_oracle", "oracle"))
    with pytest.raises(TaskError, match=r"make_oracle\(challenge\)"):
        load_task(task_root)
    (task_root / "scripts" / "produce.py").unlink()
    with pytest.raises(TaskError, match=r"\[oracle\] needs scripts/produce.py"):
        load_task(task_root)
