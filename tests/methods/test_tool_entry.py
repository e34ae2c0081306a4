"""The shared JSON entry point: arguments in, one JSON report out, field-named errors."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import FIXTURES

PYPATH = f"{FIXTURES / 'tools'}"


def call(args: list[str], stdin: str = "") -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": PYPATH + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "labcoat_echo", *args], input=stdin,
                          capture_output=True, text=True, env=env, timeout=60)


def test_arguments_from_stdin_and_from_args_flag():
    a = call([], stdin='{"message": "ab", "repeat": 2}')
    b = call(["--args", '{"message": "ab", "repeat": 2}'])
    for r in (a, b):
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        assert report["echo"] == "abab" and "seconds" in report


def test_bad_argument_exits_2_naming_the_field():
    r = call(["--args", '{"message": "x", "repeat": 0}'])
    assert r.returncode == 2
    assert "repeat" in json.loads(r.stdout)["error"]
    r = call(["--args", '{"repeat": 2}'])
    assert r.returncode == 2 and "message" in json.loads(r.stdout)["error"]
    r = call(["--args", "[1, 2]"])
    assert r.returncode == 2 and "one JSON object" in json.loads(r.stdout)["error"]


def test_schema_flag_prints_the_argument_schema():
    r = call(["--schema"])
    assert r.returncode == 0
    assert set(json.loads(r.stdout)["properties"]) == {"message", "repeat", "write_file"}
