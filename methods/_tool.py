"""The JSON entry point every method package shares: ``python -m methods.<slug> [TOOL]``.

Contract (ARCHITECTURE.md, "Method tool invocation"): ``TOOL`` is the tool's name as ``labcoat
tools`` lists it (or its short ``ToolSpec.entry``), optional when the package has one tool; the
arguments are one JSON object from ``--args`` or else stdin; the report is one JSON object on
stdout; progress goes to stderr. Every failure is one ``{"error": ...}`` object on stdout and the
same line on stderr: a wrong command line (missing or unknown tool, unknown flag) and a bad
argument exit 2 naming the field; an exception inside the tool exits 1 with its traceback on
stderr. Large arrays are written as files in the working directory by the tool itself and the
report names them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from methods.toolspec import ToolSpec

EXIT_BAD_ARGS = 2
EXIT_FAILED = 1


def _jsonable(value: Any) -> Any:
    """json.dumps fallback for numpy scalars/arrays and pydantic models in reports."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    for attr in ("tolist", "item"):
        if hasattr(value, attr):
            return getattr(value, attr)()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


def _emit(report: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(report, default=_jsonable) + "\n")
    sys.stdout.flush()


def describe_validation_error(err: ValidationError) -> str:
    """One line per problem, each naming the field, e.g. ``k: Input should be >= 1``."""
    parts = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "(arguments)"
        parts.append(f"{field}: {e['msg']}")
    return "; ".join(parts)


def _read_args(raw: str | None) -> dict[str, Any]:
    if raw is None:
        raw = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    if not raw.strip():
        return {}
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("the arguments must be one JSON object")
    return data


def _load(run: str):
    module_name, _, func_name = run.partition(":")
    return getattr(importlib.import_module(module_name), func_name)


class CommandLineError(ValueError):
    """The command line itself was wrong (unknown flag, unknown or missing tool name).

    argparse would print usage to stderr and exit; callers of a tool (actors, scripts) read
    stdout, so these become the same one-line JSON error as every other failure.
    """


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise CommandLineError(message)


def tool_names(spec: ToolSpec) -> tuple[str, ...]:
    """The names that select ``spec`` on the command line: its entry (if any) and its name,
    the one ``labcoat tools`` shows, so both spellings work."""
    return tuple(dict.fromkeys(n for n in (spec.entry, spec.name) if n))


def resolve_tool(tools: Sequence[ToolSpec], name: str | None) -> ToolSpec:
    """The tool that ``name`` selects; a package with one tool needs no name.

    Raises :class:`CommandLineError` listing the choices when the name is missing or unknown.
    """
    if name is None:
        if len(tools) == 1:
            return tools[0]
        raise CommandLineError(f"name a tool: one of {_choices(tools)}")
    for spec in tools:
        if name in tool_names(spec):
            return spec
    raise CommandLineError(f"unknown tool {name!r}; choose one of {_choices(tools)}")


def _choices(tools: Sequence[ToolSpec]) -> list[str]:
    return sorted({n for t in tools for n in tool_names(t)})


def _fail(message: str, code: int, detail: str | None = None) -> int:
    """Every failure: one JSON object on stdout (what callers parse) and the same line, plus
    any traceback, on stderr (what a human watching the process reads)."""
    _emit({"error": message})
    print(f"error: {message}", file=sys.stderr)
    if detail:
        sys.stderr.write(detail)
    sys.stderr.flush()
    return code


def _parser(tools: Sequence[ToolSpec]) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"python -m {tools[0].module}",
        description="; ".join(f"{' | '.join(tool_names(t))}: {t.description}" for t in tools),
    )
    parser.add_argument("tool", nargs="?", default=None, help=f"one of {_choices(tools)}")
    parser.add_argument("--args", help="arguments as one JSON object (default: read stdin)")
    parser.add_argument("--schema", action="store_true", help="print the JSON Schema and exit")
    return parser


def main(tools: Sequence[ToolSpec], argv: Sequence[str] | None = None) -> int:
    """Parse, validate, run one tool and print its report; returns the exit code."""
    try:
        ns = _parser(tools).parse_args(argv)
        spec = resolve_tool(tools, ns.tool)
    except CommandLineError as err:
        return _fail(str(err), EXIT_BAD_ARGS)
    if ns.schema:
        _emit(spec.args_model.model_json_schema())
        return 0
    try:
        args = spec.args_model.model_validate(_read_args(ns.args))
    except ValidationError as err:
        return _fail(f"bad arguments for {spec.name}: {describe_validation_error(err)}", EXIT_BAD_ARGS)
    except ValueError as err:  # json.JSONDecodeError is a ValueError
        return _fail(f"bad arguments for {spec.name}: {err}", EXIT_BAD_ARGS)
    start = time.perf_counter()
    try:
        report = _load(spec.run)(args)
    except (ValueError, FileNotFoundError) as err:
        # Raised by tools for argument values that only fail once used (a missing file, a
        # shape mismatch): still the caller's mistake, so it is reported the same way.
        return _fail(f"{spec.name}: {err}", EXIT_BAD_ARGS)
    except Exception as err:  # noqa: BLE001 - the report must stay one JSON object
        return _fail(f"{spec.name} failed: {type(err).__name__}: {err}", EXIT_FAILED,
                     traceback.format_exc())
    if isinstance(report, BaseModel):
        report = report.model_dump(mode="json")
    report = dict(report)
    report.setdefault("seconds", round(time.perf_counter() - start, 3))
    _emit(report)
    return 0


def run_package(package: str, argv: Sequence[str] | None = None) -> int:
    """``__main__`` helper: run the tools that ``methods.<package>.tools`` declares."""
    tools = importlib.import_module(f"methods.{package}.tools").TOOLS
    return main(tools, argv)
