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


def _by_module() -> dict[str, list]:
    from methods.registry import all_tools

    groups: dict[str, list] = {}
    for spec in all_tools().values():
        groups.setdefault(spec.module, []).append(spec)
    return groups


def _one_json_line(out: str) -> dict:
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


def test_every_name_labcoat_tools_shows_selects_that_tool(capsys):
    """`labcoat tools` lists tool names; the same names work after `python -m <module>`."""
    from methods._tool import main

    for specs in _by_module().values():
        for spec in specs:
            assert main(specs, [spec.name, "--schema"]) == 0, spec.name
            schema = _one_json_line(capsys.readouterr().out)
            assert set(schema.get("properties", {})) == set(spec.args_model.model_fields), spec.name


def test_missing_or_wrong_tool_name_is_one_json_error(capsys):
    from methods._tool import EXIT_BAD_ARGS, main

    multi = {m: s for m, s in _by_module().items() if len(s) > 1}
    assert multi, "the registry has packages with several tools"
    for module, specs in multi.items():
        assert main(specs, ["--args", "{}"]) == EXIT_BAD_ARGS
        captured = capsys.readouterr()
        error = _one_json_line(captured.out)["error"]
        assert "name a tool" in error and specs[0].name in error, error
        assert "name a tool" in captured.err
        assert main(specs, ["no_such_tool", "--args", "{}"]) == EXIT_BAD_ARGS
        captured = capsys.readouterr()
        assert "unknown tool 'no_such_tool'" in _one_json_line(captured.out)["error"]
        assert "no_such_tool" in captured.err


def test_wrong_tool_name_and_unknown_flag_in_a_real_process():
    r = call(["nope", "--args", "{}"])
    assert r.returncode == 2
    assert "unknown tool 'nope'" in _one_json_line(r.stdout)["error"]
    r = call(["--frobnicate"])
    assert r.returncode == 2 and "--frobnicate" in _one_json_line(r.stdout)["error"]
    assert "usage:" not in r.stdout


def test_runtime_error_is_json_on_stdout_and_a_traceback_on_stderr(tmp_path):
    # write_file naming a directory fails inside the tool (IsADirectoryError), not in validation
    r = call(["--args", json.dumps({"message": "x", "write_file": str(tmp_path)})])
    assert r.returncode == 1
    assert "IsADirectoryError" in _one_json_line(r.stdout)["error"]
    assert "IsADirectoryError" in r.stderr and "Traceback" in r.stderr
