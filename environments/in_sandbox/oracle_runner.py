"""An interactive task's oracle: ``eval.py: make_oracle(challenge)`` answering relayed requests.

Runs in the oracle's own sandbox (the only one that mounts the task's ``scripts/``) as
``python -I -c <this source> scripts wire challenge max_bytes timeout [split]``, its channel to the
host on stdin (a socket, moved off fd 0). It answers request frames until ``end`` or EOF; a
``ValueError`` from the task's ``answer`` refuses that request with the task's own words, which
the host relays to the submission. Stdlib-only: ``labcoat_channel`` is
``environments/in_sandbox/channel.py``, copied into ``wire`` by the host.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import sys
from collections.abc import Callable
from types import ModuleType

TRUSTED_PHASE = "trusted"  # methods._submission.load_submission refuses to run under it
MAX_MESSAGE = 500  # characters of a refusal's reason sent back


def make_answer(scripts: str, challenge: str, split: str = "test") -> Callable:
    """``scripts/eval.py: make_oracle(challenge[, split])``, the task's ``answer(op, arrays)``;
    the split only to a ``make_oracle`` that takes it (one written before the splits does not)."""
    spec = importlib.util.spec_from_file_location("labcoat_task_eval", os.path.join(scripts, "eval.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    code = module.make_oracle.__code__
    if code.co_argcount >= 2:
        return module.make_oracle(challenge, split)
    return module.make_oracle(challenge)


def serve(sock: socket.socket, answer: Callable, channel: ModuleType, max_bytes: int,
          timeout: float) -> int:
    """Answer requests on ``sock`` until ``end`` or EOF; how many were answered or refused."""
    served = 0
    while True:
        try:
            header, arrays = channel.recv_arrays(sock, max_bytes, timeout)
        except EOFError:
            return served
        if header["kind"] == "end":
            return served
        served += 1
        try:
            reply = answer(header["op"], arrays)
        except ValueError as err:  # a request the task refuses: its own words go back
            channel.send_arrays(sock, "error", header["op"], message=str(err)[:MAX_MESSAGE])
            continue
        channel.send_arrays(sock, "reply", header["op"], reply)


def main(argv: list[str]) -> None:
    scripts, wire, challenge, max_bytes, timeout = argv[:5]
    split = argv[5] if len(argv) > 5 else "test"
    os.environ["LABCOAT_PHASE"] = TRUSTED_PHASE
    sys.path[:0] = [wire, scripts] + [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    import labcoat_channel

    sock = socket.socket(fileno=os.dup(0))
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    serve(sock, make_answer(scripts, challenge, split), labcoat_channel, int(max_bytes), float(timeout))


if __name__ == "__main__":
    main(sys.argv[1:])
