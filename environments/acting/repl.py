"""The Python REPL action (MLAgentBench's, off by default): code run in the run's sandbox, its
variables kept from one call to the next.

MLAgentBench ran the code in its own process. Here each call is one sandboxed command, like
Execute Script, with its limits and in its workspace: ``environments/in_sandbox/repl_server.py``
loads the variables the previous call saved in the sandbox's private ``/tmp``, runs the code,
saves them again and prints a status line tagged with a nonce fresh for the call. Why not one
interpreter living through the run: see that module (a sandbox runs one command at a time and
ends whatever a command leaves behind, which is what keeps the workspace safe to touch between
steps).

What persists is therefore what pickles (cloudpickle where the sandbox's Python has it):
data, models, functions and classes defined in the REPL, imported modules (imported again).
Open files, generators, threads and sockets do not; the observation names each one not kept.
The variables live as long as the sandbox's ``/tmp``: a resumed or forked run, or a sandbox
that was restarted (a command that left processes behind or would not die ends its
namespace), starts without them, and the first call after says so.

The host reads back only text: the status line is parsed bounded, never unpickled, and shapes
only the observation's wording (the code could have printed it); how the command ended comes
from the sandbox's own result.
"""

from __future__ import annotations

import json
import secrets
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from environments.acting.actions import (
    LONG,
    ActionArgs,
    ActionContext,
    ActionSpec,
    Brief,
)
from environments.acting.low_level import command_outcome, command_output, output_facts
from environments.acting.observation import Observation
from environments.in_sandbox import repl_server, source
from environments.untrusted.bounded import LimitError, loads_json

PYTHON_REPL = "Python REPL"
RESTARTED = "The Python REPL restarted: earlier variables are gone."
SERVER = source(repl_server)
STATUS_MARK = repl_server.STATUS_MARK
STATUS_BYTES = 64 << 10  # a status line longer than this is output, not a status
NOTE = Annotated[str, Field(max_length=repl_server.MAX_NOTE)]


class ReplArgs(ActionArgs):
    command: Annotated[str, Brief("python code: a line or a block (a last expression's value is "
                                  "printed; variables stay for the next call)"), LONG] = Field(
        description="a valid python command")


class ReplStatus(BaseModel):
    """The server's status line, as the sandboxed side wrote it (bounded, untrusted)."""

    model_config = ConfigDict(extra="ignore")

    missing: bool = False
    exception: Annotated[str, Field(max_length=2000)] | None = None
    not_restored: Annotated[list[NOTE], Field(max_length=repl_server.MAX_NOTES)] = []
    not_kept: Annotated[list[NOTE], Field(max_length=repl_server.MAX_NOTES)] = []


def split_status(stdout: str, nonce: str) -> tuple[str, ReplStatus | None]:
    """The output without this call's status lines, and the last of them parsed (None when
    there is none, or it does not parse: the call then did not finish). Lines tagged with any
    other nonce (printed by the code, a forgery or an old call's) stay in the output as text."""
    tag = f"{STATUS_MARK}{nonce} "
    kept, status = [], None
    for line in stdout.split("\n"):
        if not line.startswith(tag):
            kept.append(line)
            continue
        try:
            raw = loads_json(line[len(tag):], max_bytes=STATUS_BYTES, max_depth=4, what="REPL status")
            status = ReplStatus.model_validate(raw)
        except (LimitError, ValueError, ValidationError):
            kept.append(line)
            status = None
    return "\n".join(kept).strip("\n"), status


class PythonRepl:
    """One run's REPL: a state file name fresh for this Environment (so a resumed or forked
    run never finds an old one), and whether its variables should be there."""

    def __init__(self) -> None:
        self.state = f"/tmp/.labcoat-repl-{secrets.token_hex(8)}.pkl"
        self.calls = 0  # calls that finished and saved the variables
        self.asked = False  # whether this REPL was called at all

    def __call__(self, ctx: ActionContext, a: ReplArgs) -> Observation:
        notes = []
        if not self.asked and any(getattr(s, "action", None) == PYTHON_REPL for s in ctx.steps()):
            notes.append(RESTARTED)  # calls before this REPL existed: a resumed or forked run
        self.asked = True
        nonce = secrets.token_hex(16)
        request = json.dumps({"nonce": nonce, "code": a.command, "expect_state": self.calls > 0})
        sandbox = ctx.sandbox
        result = sandbox.exec([sandbox.python, "-c", SERVER, self.state], stdin=request,
                              timeout=ctx.task.limits.exec_timeout)
        output, status = split_status(result.stdout, nonce)
        output = command_output(output, result.stderr)
        outcome, said = command_outcome(ctx, result, "code")
        if status is not None and result.ok:
            self.calls += 1
            if status.missing:
                notes.append(RESTARTED)
            if status.not_restored:
                notes.append("Not restored from the previous call: " + "; ".join(status.not_restored))
            if status.not_kept:
                notes.append("Not kept for the next call (cannot be pickled): " + "; ".join(status.not_kept))
        elif outcome == "ok":  # exited 0 without its status: the code ended the process itself
            outcome, said = "exit", "The REPL's process ended before the call finished"
        if status is None or not result.ok:
            notes.append(f"{said.rstrip('.')}; variables are as the previous call left them."
                         if self.calls else f"{said.rstrip('.')}; no variables were kept.")
        error = not result.ok or status is None or status.exception is not None
        text = "\n".join([*notes, output or "(the code printed nothing)"])
        return ctx.observe(text, facts=output_facts(outcome, result.exit_code, output),
                           exit_code=result.exit_code, seconds=result.seconds, error=error)


def repl_action() -> ActionSpec:
    """The Python REPL action, with a REPL of its own (one per Environment)."""
    return ActionSpec(
        PYTHON_REPL, "A python REPL in the sandbox, in the workspace. Use this to execute python "
        "commands; variables, functions and imports stay for the next call (until the run is "
        "resumed or its sandbox restarts).", ReplArgs, PythonRepl(),
        brief="run python code; variables persist between calls")
