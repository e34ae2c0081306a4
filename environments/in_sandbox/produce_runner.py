"""The submission phase: imports the task's ``produce.py`` by path and calls ``produce``.

Runs in the submission's sandbox as ``python -I -c <this source> here workspace out
[max_bytes reply_timeout]``: ``here`` is the read-only folder of ``produce.py``, ``inputs/``
and ``challenge.txt`` (``environments/scoring/submission.py: produce_dir``). Its exit code is the whole
answer: 0, :data:`NO_SUBMISSION_EXIT` when the submission's file is missing
(``FileNotFoundError``), 1 on any other error (the traceback on stderr, the submission's own
output). An interactive task's oracle channel arrives as stdin (a socket); it is moved off fd 0
to a descriptor no subprocess inherits, and ``produce`` gets it as ``oracle``. Stdlib-only:
``labcoat_channel`` is ``environments/in_sandbox/channel.py``, copied into ``here`` by the host.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path

NO_SUBMISSION_EXIT = 3
FAILED_EXIT = 1


def oracle_client(max_bytes: int, reply_timeout: float):
    """The oracle channel on stdin, as the callable ``produce`` gets; stdin becomes /dev/null."""
    import socket

    import labcoat_channel

    sock = socket.socket(fileno=os.dup(0))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    return labcoat_channel.OracleClient(sock, max_bytes, reply_timeout)


def produce(here: str, workspace: str, out: str, *extra) -> int:
    """Call ``here/produce.py: produce(workspace, here, out, *extra)``; the exit code it earns."""
    try:
        spec = importlib.util.spec_from_file_location("labcoat_task_produce", os.path.join(here, "produce.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.produce(Path(workspace), Path(here), Path(out), *extra)
    except FileNotFoundError:
        traceback.print_exc()
        return NO_SUBMISSION_EXIT
    except BaseException:  # noqa: BLE001 - whatever the submission raises is its failure
        traceback.print_exc()
        return FAILED_EXIT
    return 0


def main(argv: list[str]) -> int:
    here, workspace, out = argv[:3]
    sys.path[:0] = [here, os.path.join(here, "inputs")] + [
        p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    extra = (oracle_client(int(argv[3]), float(argv[4])),) if len(argv) > 3 else ()
    os.makedirs(out, exist_ok=True)
    os.chdir(workspace)
    return produce(here, workspace, out, *extra)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
