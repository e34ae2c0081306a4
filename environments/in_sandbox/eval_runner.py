"""The trusted phase's runner: the only process whose line counts as a score.

Runs in the scoring sandbox as ``python -I -c <this source> scripts folder function
child_source each`` (no workspace on ``sys.path``, so a workspace ``json.py`` or ``numpy.py``
shadows nothing). It never imports task or workspace code itself: :mod:`.eval_child` does, in a
process with stdin closed, and hands its report back on a private pipe. Only after that child
has exited does the runner read the nonce (from its own stdin, which the child could not read)
and print ``LABCOAT_RESULT <nonce> {json}``. It makes itself non-dumpable first, so nothing the
child leaves running can read its memory or descriptors through ``/proc``. Code that ``eval.py``
imports can therefore print what it likes: without the nonce no line it prints counts.
Stdlib-only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TextIO

RESULT_TAG = "LABCOAT_RESULT"
MAX_REPORT_BYTES = 1 << 16
PR_SET_DUMPABLE = 4


def make_undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: no ptrace, no ``/proc/<pid>/mem`` or ``fd`` for the child's
    leftovers (best effort: without ctypes the runner still runs)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001 - a Python without ctypes
        pass


def run_child(child_source: str, scripts: str, folder: str, function: str, each: str) -> tuple[bytes, int]:
    """Start the child with stdin closed and the pipe's write end; (what it wrote, its exit code)."""
    read_fd, write_fd = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-I", "-c", child_source, scripts, folder, function, str(write_fd),
         os.environ.get("PYTHONPATH", ""), each],
        stdin=subprocess.DEVNULL, pass_fds=(write_fd,))
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        raw = pipe.read(MAX_REPORT_BYTES)
    return raw, child.wait()


def parse_report(raw: bytes) -> dict:
    """The child's last line as a JSON object, else an error report (it died before writing)."""
    try:
        report = json.loads(raw.decode().strip().splitlines()[-1])
    except Exception:  # noqa: BLE001 - no line, a torn line, not UTF-8
        report = None
    if not isinstance(report, dict):
        return {"error": "the evaluation child gave no report"}
    return report


def result_line(nonce: str, report: dict, exit_code: int) -> str:
    """The tagged line the host looks for (a blank line first: the child may not end its own)."""
    return f"\n{RESULT_TAG} {nonce} {json.dumps({**report, 'exit': exit_code})}"


def main(argv: list[str], stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
    scripts, folder, function, child_source, each = argv[:5]
    make_undumpable()
    raw, code = run_child(child_source, scripts, folder, function, each)
    nonce = stdin.readline().strip()  # only now: the child is gone
    print(result_line(nonce, parse_report(raw), code), file=stdout, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
