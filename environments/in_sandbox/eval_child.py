"""The trusted phase's child: imports the task's pristine ``eval.py`` and calls its function.

Started by :mod:`.eval_runner` as ``python -I -c <this source> scripts folder function fd
pythonpath each``, with stdin closed. It imports ``eval.py`` by path from the read-only scripts
folder (never from the scored folder, which is its working directory), calls ``function`` on the
folder and writes one JSON report on the pipe ``fd``: ``{"value"}``, ``{"no_submission"}`` (a
``FileNotFoundError``: the submission's file is missing) or ``{"error"}``. Whatever the task's
code prints goes to the sandbox's stdout and counts for nothing: only the runner's nonce'd line
does. Stdlib-only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable

TRUSTED_PHASE = "trusted"  # methods._submission.load_submission refuses to run under it


def load_function(scripts: str, function: str) -> Callable:
    """``function`` of ``scripts/eval.py``, loaded by path under a name no workspace file has."""
    spec = importlib.util.spec_from_file_location("labcoat_task_eval", os.path.join(scripts, "eval.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, function):
        raise AttributeError(f"eval.py defines no {function}()")
    return getattr(module, function)


def value_of(fn: Callable, folder: str, each: bool, name: str = "score") -> float:
    """``fn(folder)``; for a timed task (``each``) the same check on every ``rep*`` folder's
    outputs, which must all give one value (each repeat had its own challenge)."""
    if not each:
        return float(fn(folder))
    values = [float(fn(os.path.join(folder, d))) for d in sorted(os.listdir(folder))
              if d.startswith("rep")]
    if not values or len(set(values)) != 1:
        raise ValueError(f"{name}() gave {values} over the repeats, not one value")
    return values[0]


def report(scripts: str, folder: str, function: str, each: bool) -> dict:
    """The child's report; never raises (a traceback goes to stderr, for the private detail)."""
    try:
        return {"value": value_of(load_function(scripts, function), folder, each, function)}
    except FileNotFoundError as e:
        traceback.print_exc()
        return {"no_submission": str(e)}
    except BaseException as e:  # noqa: BLE001 - whatever eval.py raises is the task's failure
        traceback.print_exc()
        return {"error": f"{type(e).__name__}: {e}"}


def main(argv: list[str]) -> None:
    scripts, folder, function, fd, pythonpath, each = argv[:6]
    out = os.fdopen(int(fd), "w")
    os.environ["LABCOAT_PHASE"] = TRUSTED_PHASE
    sys.path[:0] = [scripts] + [p for p in pythonpath.split(":") if p]
    os.chdir(folder)
    result = report(scripts, folder, function, each == "1")
    sys.stdout.flush()
    out.write("\n" + json.dumps(result) + "\n")
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
