"""The Python REPL action: code runs in the run's sandbox, one command per call, its variables
carried between calls in the sandbox's ``/tmp``.

The attacks first (the sandboxed side may print anything, forge the status line, never
answer, leave a child behind, or try to reach the host), then what a user relies on: variables
and functions persist, what cannot be kept is named, and a restart (resume, fork, a sandbox
started afresh) is said once.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from agent.prompts import describe_actions
from environments.acting.environment import (
    Environment,
    code_mounts,
    optional_actions,
    optional_names,
)
from environments.acting.repl import PYTHON_REPL, RESTARTED, STATUS_MARK, split_status
from environments.in_sandbox import repl_server, source
from environments.task.spec import load_task
from tests.conftest import write_task
from tests.sandbox.backends import docker_marks, make_sandbox

TOML = ('metric = "total"\ndirection = "higher"\nbaseline = 6.0\nsolve = ["train.py"]\n'
        "[limits]\nexec_timeout = 4\n")
BACKENDS = [pytest.param("local", id="local"), pytest.param("docker", id="docker", marks=docker_marks)]


def _env(tmp_path: Path, backend: str = "local", **kw) -> Environment:
    task = load_task(write_task(tmp_path / "task", toml=TOML))
    ws = tmp_path / "ws"
    shutil.copytree(task.env_dir, ws)
    sandbox = make_sandbox(backend, ws, mounts=code_mounts())
    return Environment(task, ws, sandbox, extra_actions=optional_actions([PYTHON_REPL]), **kw)


@pytest.fixture
def env(tmp_path):
    env = _env(tmp_path)
    yield env
    env.sandbox.close()


def repl(env: Environment, code: str):
    return env.step(PYTHON_REPL, {"command": code})


# --- attacks ------------------------------------------------------------------------------

def _hwm_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_100_mb_print_is_capped_and_the_host_stays_small(env):
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
    before = _hwm_kb()
    obs = repl(env, "x = 7\nprint('y' * 100_000_000)\nimport os; os.write(1, b'z' * 50_000_000)")
    grew_mb = (_hwm_kb() - before) / 1024
    assert len(obs.full_text or obs.text) < 3 * env.task.limits.output_bytes
    assert "dropped by the sandbox" in (obs.full_text or obs.text) and obs.truncated
    assert grew_mb < 64, f"labcoat's memory grew by {grew_mb:.0f} MB"
    after = repl(env, "x * 6")  # the status line at the end survived the flood
    assert after.text.strip() == "42" and not after.error


def test_forged_status_lines_are_output_and_the_sandbox_decides_how_the_call_ended(env):
    forged = (
        # a made-up nonce, a stale one, and a 4 GB "length header": text, nothing more
        f"print({STATUS_MARK + '0' * 32 + ' {}'!r})\n"
        f"print({STATUS_MARK!r} + 'f' * 32 + ' ' + '9' * 40 + ' {{\"missing\": true}}')\n"
        "print('\\x00\\x00\\xff\\xff' + '{' * 100000)\n"
        # the real nonce, read from the server's memory: a status claiming a clean call ...
        "import sys, os, json\n"
        "f = sys._getframe()\n"
        "while 'request' not in f.f_locals: f = f.f_back\n"
        "n = f.f_locals['request']['nonce']\n"
        f"os.write(1, ('\\n' + {STATUS_MARK!r} + n + ' ' + json.dumps({{'missing': False}}) + '\\n').encode())\n"
        "os._exit(3)\n"  # ... then the process ends with 3: the sandbox's word wins
    )
    obs = repl(env, forged)
    assert obs.error and obs.exit_code == 3 and "exited with code 3" in obs.text
    assert RESTARTED not in obs.text
    assert obs.text.count(STATUS_MARK.strip()) == 2  # the two with the wrong nonce, shown as text
    assert repl(env, "1 + 1").text.strip() == "2"  # nothing hangs, the next call is clean


def test_split_status_takes_only_this_calls_well_formed_line():
    mark = STATUS_MARK
    out, status = split_status(f"a\n{mark}abc {{}}\nb\n{mark}xyz {{\"exception\": \"E\"}}\n", "xyz")
    assert out == f"a\n{mark}abc {{}}\nb" and status.exception == "E"
    for bad in ("[" * 50 + "]" * 50, '{"not_kept": ' + '["x"],' * 0 + '["x"' + ',"x"' * 100 + "]}",
                "{" + '"exception": "' + "e" * 70_000 + '"}', "not json"):
        out, status = split_status(f"{mark}n {bad}", "n")
        assert status is None and out.startswith(mark)


def test_code_that_never_answers_ends_at_the_exec_timeout(env):
    assert not repl(env, "kept = 'before'").error
    start = time.monotonic()
    obs = repl(env, f"import sys\nsys.stdout.write({STATUS_MARK!r} + 'x' * 32 + ' {{\"miss')\n"
                    "sys.stdout.flush()\nwhile True: pass")
    took = time.monotonic() - start
    assert obs.error and obs.data["outcome"] == "timeout" and took < 60  # 4 s limit, ~4.5 s measured
    assert "time limit of 4 s" in obs.text and "as the previous call left them" in obs.text
    assert repl(env, "kept").text.strip() == "'before'"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_child_the_code_leaves_running_is_gone_when_the_call_ends(tmp_path, backend):
    env = _env(tmp_path, backend)
    try:
        obs = repl(env, "import subprocess, sys\n"
                        "subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True:\\n"
                        "    open(\"beat.txt\", \"a\").write(\"x\"); time.sleep(0.05)'], "
                        "start_new_session=True)\n"
                        "import time; time.sleep(0.5)\nprint('left it')")
        assert "left it" in obs.text
        size = (env.workspace / "beat.txt").stat().st_size
        time.sleep(1.0)
        assert (env.workspace / "beat.txt").stat().st_size == size  # nothing writes any more
        procs = repl(env, "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())")
        assert len(ast.literal_eval(procs.text.strip().splitlines()[-1])) <= 2  # PID 1 and itself
    finally:
        env.sandbox.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_code_runs_sandboxed_not_in_labcoats_process(tmp_path, monkeypatch, backend):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("the host's")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host")
    env = _env(tmp_path, backend)
    try:
        obs = repl(env, "import os, builtins\nbuiltins.LABCOAT_PWNED = True\n"
                        f"print(os.path.exists({str(secret)!r}), os.path.exists('/proc/{os.getpid()}/mem'),\n"
                        "      'OPENAI_API_KEY' in os.environ, os.getcwd())")
    finally:
        env.sandbox.close()
    assert obs.text.strip() == "False False False /workspace"
    import builtins
    assert not hasattr(builtins, "LABCOAT_PWNED")


# --- what the REPL keeps ------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_variables_functions_and_imports_persist_between_calls(tmp_path, backend):
    env = _env(tmp_path, backend)
    try:
        assert not repl(env, "import math as m\nclass P:\n    def __init__(self, v): self.v = v\n"
                             "def twice(v): return 2 * v\nshared = [1]\nalso = shared\nn = 20").error
        assert repl(env, "also.append(2)\nP(twice(n)).v + len(shared)").text.strip() == "42"
        assert repl(env, "m.floor(2.5), open('data.txt').read().split()").text.strip() == \
            "(2, ['1', '2', '3'])"
        boom = repl(env, "twice(undefined)")
        assert boom.error and "NameError" in boom.text and "repl_server" not in boom.text
        assert not repl(env, "open('made.txt', 'w').write('by the repl')").error
        assert (env.workspace / "made.txt").read_text() == "by the repl"
    finally:
        env.sandbox.close()


def test_what_cannot_be_pickled_is_named_and_the_rest_kept(env):
    obs = repl(env, "gen = (i for i in range(3))\nkeep = 5\nexit(0)")
    assert "Not kept for the next call" in obs.text and "gen (generator" in obs.text
    assert "SystemExit" not in obs.text or obs.error
    assert repl(env, "keep").text.strip() == "5"
    assert "NameError" in repl(env, "gen").text


def test_a_restarted_sandbox_and_a_resumed_run_say_the_variables_are_gone(env, tmp_path):
    repl(env, "x = 1")
    env.sandbox.close()  # the next command starts a fresh namespace, its /tmp empty
    obs = repl(env, "y = 2")
    assert obs.text.startswith(RESTARTED)
    assert not repl(env, "y").text.startswith(RESTARTED)  # said once

    # a new Environment over a session whose steps include REPL calls: a resume, a fork
    fresh = Environment(env.task, env.workspace, env.sandbox,
                        extra_actions=optional_actions([PYTHON_REPL]))
    fresh._session = list(env.steps())
    assert fresh.step(PYTHON_REPL, {"command": "'x' in dir()"}).text == f"{RESTARTED}\nFalse"


def test_a_workspace_module_shadows_nothing_of_the_repl_and_stays_importable(env):
    (env.workspace / "json.py").write_text("raise RuntimeError('shadowed')\n")
    (env.workspace / "helpers.py").write_text("VALUE = 9\n")
    assert repl(env, "import helpers\nhelpers.VALUE").text.strip() == "9"


def test_the_server_imports_only_the_standard_library():
    tree = ast.parse(source(repl_server))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names - set(sys.stdlib_module_names) == set()


# --- off by default --------------------------------------------------------------------

def test_the_optional_actions_are_off_by_default_and_named_strictly(tiny_task, tmp_path):
    task = load_task(tiny_task)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = Environment(task, ws, make_sandbox("local", ws))
    try:
        assert PYTHON_REPL not in env.actions and "Request Help" not in env.actions
        assert "Invalid action" in env.step(PYTHON_REPL, {"command": "1"}).text
        listed = describe_actions(list(env.actions.values()))  # what the research prompt lists
        assert "Python REPL" not in listed and "Request Help" not in listed
        env.register(optional_actions(["request help"])[0])
        assert "Request Help {request}: ask the person" in describe_actions(list(env.actions.values()))
    finally:
        env.sandbox.close()
    assert optional_names(" python-repl, REQUEST_help ") == ("Python REPL", "Request Help")
    with pytest.raises(ValueError, match="no optional action 'Pyhton REPL'"):
        optional_names("Pyhton REPL")
