"""One call of the Python REPL action, inside the run's sandbox (``environments/acting/repl.py``).

Run as ``python -c <this source> STATE`` in the workspace, with the request on stdin: one JSON
object ``{"nonce", "code", "expect_state"}``. It loads the variables an earlier call left in
``STATE`` (a file in the sandbox's private ``/tmp``), runs ``code`` in them (the value of a
last bare expression is printed, as an interactive interpreter echoes it), saves them back, and
ends with one status line on stdout: ``STATUS_MARK + nonce + " " + JSON``, the JSON saying
whether the variables were there, which exception the code raised and what could not be kept.

Why a process per call and not one process for the whole run: a sandbox runs one command at a
time and kills whatever a command leaves behind when it ends (the supervisor's sweep), and the
host touches the workspace only while nothing sandboxed runs. A resident interpreter would hold
the sandbox against every other command and outlive the steps. So the *namespace* is what
persists: pickled (cloudpickle where installed, so functions and classes defined here survive;
else the standard pickle) into the sandbox's ``/tmp``, which lives as long as the sandbox and
no longer (a restarted sandbox starts empty, and the host is told).

The code runs in this same process, so it can print anything, the status line included, and
can read the nonce from this module's memory: the host treats the status as what it is (the
sandboxed side's word, shaping only the observation's wording) and takes timeouts, memory kills
and exit codes from the sandbox, never from here. Stdlib-only (cloudpickle optional), like every
program in this folder.
"""

import sys

# ``python -c`` puts the working directory (the workspace) first on ``sys.path``: drop it while
# this program imports its own modules, so a workspace ``json.py`` shadows nothing of ours, and
# put it back for the code, which may import the workspace's modules like a script would.
_WORKSPACE_ENTRY = sys.path.pop(0) if sys.path and sys.path[0] in ("", ".") else None

import ast  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

try:  # functions and classes defined in the REPL survive only with cloudpickle (optional:
    _pickler = importlib.import_module("cloudpickle")  # a task's own interpreter may lack it)
except ImportError:  # pragma: no cover - depends on the sandbox's interpreter
    _pickler = pickle

STATUS_MARK = "\x1elabcoat-repl-status "
MAX_NOTES = 40
MAX_NOTE = 160
FILENAME = "<repl>"


def _note(name: str, why: object) -> str:
    return f"{name} ({why})"[:MAX_NOTE]


def load_state(path: str) -> tuple[dict | None, list[str]]:
    """The variables saved at ``path`` (None when there is no such file) and what could not be
    brought back (a module no longer importable, a value whose class is gone)."""
    try:
        with open(path, "rb") as f:
            saved = pickle.load(f)
    except FileNotFoundError:
        return None, []
    except Exception as err:  # a file cut short by a kill mid-write is never renamed in
        return {}, [_note("all variables", f"unreadable: {type(err).__name__}")]
    ns: dict = {}
    lost: list[str] = []
    for name, module in saved.get("modules", {}).items():
        try:
            ns[name] = importlib.import_module(module)
        except Exception as err:
            lost.append(_note(name, f"module {module}: {type(err).__name__}"))
    if saved.get("values") is not None:
        try:
            ns.update(pickle.loads(saved["values"]))
        except Exception as err:
            lost.append(_note("the other variables", f"{type(err).__name__}: {err}"))
    return ns, lost


def _user_items(ns: dict) -> dict:
    return {k: v for k, v in ns.items() if not (k.startswith("__") and k.endswith("__"))}


def save_state(ns: dict, path: str) -> list[str]:
    """Pickle the variables to ``path`` (atomically: a kill mid-write leaves the old file);
    what could not be kept, each with why. One pickle for all, so objects shared between
    variables (a model and its optimiser) stay shared; only when that fails are the culprits
    found one by one and left out."""
    modules, values, lost = {}, {}, []
    for name, value in _user_items(ns).items():
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        else:
            values[name] = value
    try:
        blob = _pickler.dumps(values)
    except Exception:
        for name in list(values):
            try:
                _pickler.dumps(values[name])
            except Exception as err:
                lost.append(_note(name, f"{type(values.pop(name)).__name__}: {type(err).__name__}"))
        try:
            blob = _pickler.dumps(values)
        except Exception as err:
            lost.append(_note(", ".join(values) or "the rest", f"{type(err).__name__}"))
            blob = None
    part = f"{path}.part"
    with open(part, "wb") as f:
        pickle.dump({"modules": modules, "values": blob}, f)
    os.replace(part, path)
    return lost


def _compiled(code: str) -> tuple[types.CodeType | None, types.CodeType | None]:
    """The code as statements, and its last bare expression apart (to print its value)."""
    tree = ast.parse(code, FILENAME, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), FILENAME, "eval")
    return compile(tree, FILENAME, "exec"), last


def run(code: str, ns: dict) -> str | None:
    """Run ``code`` in ``ns``; the exception it raised, as one line (its traceback, without
    this program's frames, goes to stderr as a script's would), or None."""
    try:
        body, last = _compiled(code)
        exec(body, ns)
        if last is not None:
            value = eval(last, ns)
            if value is not None:
                ns["_"] = value
                print(repr(value))
        return None
    except SystemExit as err:
        return f"SystemExit({err.code!r}) (the REPL keeps going; nothing exits)"
    except BaseException as err:  # noqa: BLE001 - the code's own error is the observation
        tb = err.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != FILENAME:
            tb = tb.tb_next  # this program's frames are not the code's
        sys.stderr.write("".join(traceback.format_exception(type(err), err, tb)))
        return "".join(traceback.format_exception_only(type(err), err)).strip()[-2000:]


def main(argv: list[str]) -> None:
    state = argv[0]
    request = json.loads(sys.stdin.read())
    ns, lost = load_state(state)
    missing = ns is None and bool(request.get("expect_state"))
    ns = ns or {}
    ns.update({"__name__": "__main__", "__builtins__": __builtins__})
    if _WORKSPACE_ENTRY is not None:
        sys.path.insert(0, _WORKSPACE_ENTRY)
    sys.stdin = io.StringIO("")  # the code reads no request of ours
    exception = run(request.get("code", ""), ns)
    try:
        not_kept = save_state(ns, state)
    except Exception as err:  # the tmpfs full, say: the call's output still counts
        not_kept = [_note("all variables", f"not saved: {type(err).__name__}: {err}")]
    status = {"missing": missing, "exception": exception,
              "not_restored": lost[:MAX_NOTES], "not_kept": not_kept[:MAX_NOTES]}
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass
    line = "\n" + STATUS_MARK + request.get("nonce", "") + " " + json.dumps(status) + "\n"
    os.write(1, line.encode())
    os._exit(0)  # no atexit handler of the code's prints after the status


if __name__ == "__main__":
    main(sys.argv[1:])
