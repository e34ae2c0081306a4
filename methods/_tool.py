"""The JSON entry point every method package shares: ``python -m methods.<slug> [TOOL]``.

Contract (ARCHITECTURE.md, "Method tool invocation"): the arguments are one JSON object from
``--args`` or else stdin; the report is one JSON object on stdout; progress goes to stderr; a
bad argument exits 2 with ``{"error": ...}`` naming the field. Large arrays are written as files
in the working directory by the tool itself and the report names them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
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


def main(tools: Sequence[ToolSpec], argv: Sequence[str] | None = None) -> int:
    """Parse, validate, run one tool and print its report; returns the exit code."""
    by_entry = {t.entry or t.name: t for t in tools}
    parser = argparse.ArgumentParser(
        prog=f"python -m {tools[0].module}",
        description="; ".join(f"{k}: {t.description}" for k, t in by_entry.items()),
    )
    if len(tools) > 1:
        parser.add_argument("tool", choices=sorted(by_entry))
    else:
        parser.add_argument("tool", nargs="?", default=next(iter(by_entry)))
    parser.add_argument("--args", help="arguments as one JSON object (default: read stdin)")
    parser.add_argument("--schema", action="store_true", help="print the JSON Schema and exit")
    ns = parser.parse_args(argv)
    spec = by_entry.get(ns.tool)
    if spec is None:
        _emit({"error": f"unknown tool {ns.tool!r}; choose one of {sorted(by_entry)}"})
        return EXIT_BAD_ARGS
    if ns.schema:
        _emit(spec.args_model.model_json_schema())
        return 0
    try:
        args = spec.args_model.model_validate(_read_args(ns.args))
    except ValidationError as err:
        msg = describe_validation_error(err)
        _emit({"error": f"bad arguments for {spec.name}: {msg}"})
        print(f"error: {msg}", file=sys.stderr)
        return EXIT_BAD_ARGS
    except ValueError as err:  # json.JSONDecodeError is a ValueError
        _emit({"error": f"bad arguments for {spec.name}: {err}"})
        return EXIT_BAD_ARGS
    start = time.perf_counter()
    try:
        report = _load(spec.run)(args)
    except (ValueError, FileNotFoundError) as err:
        # Raised by tools for argument values that only fail once used (a missing file, a
        # shape mismatch): still the caller's mistake, so it is reported the same way.
        _emit({"error": f"{spec.name}: {err}"})
        return EXIT_BAD_ARGS
    except Exception as err:  # noqa: BLE001 - the report must stay one JSON object
        _emit({"error": f"{spec.name} failed: {type(err).__name__}: {err}"})
        return EXIT_FAILED
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
