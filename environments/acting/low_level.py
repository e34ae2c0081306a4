"""The low-level actions, with MLAgentBench's names and argument names.

Every file action goes through the context's :class:`~environments.acting.paths.PathGuard` and
does its I/O by descriptor (``guard.fs``, :mod:`sandbox.fs`), so a process left in the
sandbox cannot swap a name for a link to a host file mid-action; every script runs through the
sandbox. Handlers take an :class:`~environments.acting.actions.ActionContext` (not the Environment)
and raise ``WorkspaceError`` (``PathRefused`` is one) or ``ActionFailed`` for the actor's
mistakes; the environment turns those into error observations.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated, BinaryIO

from pydantic import Field

from environments.acting.actions import (
    LONG,
    ActionArgs,
    ActionContext,
    ActionFailed,
    ActionSpec,
    Brief,
)
from environments.acting.observation import (
    TAIL_CHARS,
    ActionFacts,
    Observation,
    last_lines,
    settle_carriage_returns,
)
from environments.record.runs import FINAL_ANSWER
from sandbox.fs import (
    CHUNK,
    TEMP_PREFIX,
    Entry,
    display_name,
    is_utf8,
    refuse_kind,
)

if TYPE_CHECKING:
    from sandbox import ExecResult

MAX_INSPECT_LINES = 100
READ_LIMIT = 256 * 1024  # bytes of a file Read File shows (and the trace keeps); the rest is not read
MAX_LINE_BYTES = 10_000  # of one line shown by Inspect Script Lines
READ_REST = "Read the rest with a script (e.g. head/tail/sed -n)."
# Observation wording (MLAgentBench's). What it reports is also in each observation's data
# (ActionFacts): readers use that; the digest reads the wording back only for older traces.
EXECUTED = "The script has been executed."
OUTPUT_FOLLOWS = " Here is the output:"
LINES_HEADER = "Here are the lines (the file ends at line {count}):"


# MLAgentBench's argument wording (its descriptions), and labcoat's briefs for the research prompt.
#: the actions' names, spelled once: every other module that names an action imports these
LIST_FILES = "List Files"
READ_FILE = "Read File"
WRITE_FILE = "Write File"
APPEND_FILE = "Append File"
COPY_FILE = "Copy File"
UNDO_EDIT = "Undo Edit Script"
EXECUTE_SCRIPT = "Execute Script"
INSPECT_LINES = "Inspect Script Lines"
RESTORE = "Restore Workspace"

FILE = "a valid file name with relative path to current directory if needed"
SCRIPT = "a valid python script name with relative path to current directory if needed"
SCRIPT_BRIEF = "a python script"
LINE = "a valid line number"
LINE_BRIEF = "a line number (the first is 1)"
File = Annotated[str, Brief("")]  # the argument's name says what it is (file_name, source, ...)
Script = Annotated[str, Brief(SCRIPT_BRIEF)]
LineNumber = Annotated[int, Brief(LINE_BRIEF)]


class ListFilesArgs(ActionArgs):
    dir_path: Annotated[str, Brief('a directory ("." is the top)')] = Field(
        description='a valid relative path to a directory, such as "." or "folder1/folder2"')


class ReadFileArgs(ActionArgs):
    file_name: File = Field(description=FILE)


class WriteFileArgs(ActionArgs):
    file_name: File = Field(description=FILE)
    content: Annotated[str, Brief(""), LONG] = Field(description="the content to be written to the file")


class CopyFileArgs(ActionArgs):
    source: File = Field(description=FILE)
    destination: File = Field(description=FILE)


class UndoArgs(ActionArgs):
    script_name: Script = Field(description=SCRIPT)


class RestoreArgs(ActionArgs):
    step: int = Field(ge=0, description="the step whose workspace to go back to (0: the start)")


class ExecuteArgs(ActionArgs):
    script_name: Script = Field(description=SCRIPT)
    arguments: Annotated[str, Brief("its command-line arguments, as one string")] = Field(
        "", description="command-line arguments for the script, as one string")


class InspectArgs(ActionArgs):
    script_name: Script = Field(description=SCRIPT)
    start_line_number: LineNumber = Field(description=LINE, ge=1)
    end_line_number: LineNumber = Field(description=LINE, ge=1)


class FinalAnswerArgs(ActionArgs):
    final_answer: Annotated[str, Brief("the answer, in detail"), LONG] = Field(
        description="a detailed description on the final answer")


def list_files(ctx: ActionContext, a: ListFilesArgs) -> Observation:
    entries = ctx.guard.fs.listdir(ctx.guard.relative(a.dir_path))
    lines = [_listed(e) for e in entries if not e.name.startswith(TEMP_PREFIX)]
    return ctx.observe("\n".join(lines) if lines else "(empty directory)")


def _listed(e: Entry) -> str:
    """One List Files line; a symlink says so and is never followed (its target stays unknown)."""
    name = display_name(e.name)
    line = name + {"dir": "/", "symlink": "@ (symlink)"}.get(e.kind, "")
    if e.kind in ("fifo", "socket", "device"):
        line += f" ({e.kind}; file actions cannot use it)"
    if not is_utf8(e.name):
        line += " (its name is not UTF-8: file actions and snapshots skip it; rename it with a script)"
    return line


def read_text(ctx: ActionContext, name: str, limit: int = READ_LIMIT) -> str:
    """A workspace text file's first ``limit`` bytes (never more is read), with a note if cut."""
    return _read_text(ctx, name, limit)[0]


def _read_text(ctx: ActionContext, name: str, limit: int = READ_LIMIT) -> tuple[str, ActionFacts]:
    data, size = ctx.guard.fs.read(ctx.guard.relative(name), limit)
    if b"\x00" in data[:8192]:
        raise ActionFailed(f"{name!r} is a binary file ({size} bytes); inspect it with a script")
    text = data.decode("utf-8", "replace")
    facts = ActionFacts(size_bytes=size, shown_bytes=len(data), lines_total=None if size > len(data)
                        else text.count("\n") + (not text.endswith("\n") and bool(text)))
    if size > len(data):
        text += f"\n\n[{name} is {size:,} bytes; only its first {len(data):,} are shown. {READ_REST}]"
    return text, facts


def read_file(ctx: ActionContext, a: ReadFileArgs) -> Observation:
    text, facts = _read_text(ctx, a.file_name)
    return ctx.observe(text, facts=facts)


def _writable_target(ctx: ActionContext, name: str) -> str:
    """The clean path of a file about to be written, its old version kept for Undo."""
    rel = ctx.guard.writable(name)
    kind = ctx.guard.fs.kind(rel)
    if kind not in (None, "file"):
        raise refuse_kind(name, kind, "a file; give a file name")
    ctx.backups.save(rel, ctx.guard.fs)
    return rel


def _write(ctx: ActionContext, name: str, content: str, append: bool) -> Observation:
    rel = _writable_target(ctx, name)
    ctx.guard.fs.write(rel, content.encode("utf-8", "backslashreplace"), append=append)
    verb = "appended to" if append else "written to"
    return ctx.observe(f"File {name} {verb} successfully.", facts=ActionFacts(shown_bytes=len(content)))


def write_file(ctx: ActionContext, a: WriteFileArgs) -> Observation:
    return _write(ctx, a.file_name, a.content, append=False)


def append_file(ctx: ActionContext, a: WriteFileArgs) -> Observation:
    return _write(ctx, a.file_name, a.content, append=True)


def copy_file(ctx: ActionContext, a: CopyFileArgs) -> Observation:
    src = ctx.guard.relative(a.source)
    if ctx.guard.fs.kind(src) != "file":
        ctx.guard.fs.read(src, 0)  # the clear refusal: missing, a folder, a link, a FIFO ...
    dst = _writable_target(ctx, a.destination)
    ctx.guard.fs.copy(src, dst)
    return ctx.observe(f"File {a.source} copied to {a.destination}")


def undo_edit(ctx: ActionContext, a: UndoArgs) -> Observation:
    rel = ctx.guard.writable(a.script_name)
    if not ctx.backups.restore(rel, ctx.guard.fs):
        raise ActionFailed(f"there is no earlier version of {a.script_name!r} to go back to")
    exists = ctx.guard.fs.kind(rel) == "file"
    content = read_text(ctx, rel) if exists else "(the file did not exist before; removed)"
    return ctx.observe(f"Content of {a.script_name} after undo the most recent edit:\n{content}")


def restore_workspace(ctx: ActionContext, a: RestoreArgs) -> Observation:
    files = ctx.restore_step(a.step)
    return ctx.observe(f"The workspace is as step {a.step} left it ({files} files).")


RESTORE_WORKSPACE = ActionSpec(
    RESTORE, "Use this to make the whole workspace exactly as a recorded step left it "
    "(its files and outputs), from the run's snapshot.", RestoreArgs, restore_workspace,
    brief="make the workspace as a step left it", free=True)
"""Not offered by default: an actor that needs it brings it (the tree agent, to end with its
best node's workspace without running it again)."""


def execute_script(ctx: ActionContext, a: ExecuteArgs) -> Observation:
    rel = ctx.guard.relative(a.script_name)
    if ctx.guard.fs.kind(rel) not in ("file", "symlink"):  # a link is followed in the sandbox only
        raise ActionFailed(f"cannot execute {a.script_name!r}: no such file in the workspace")
    if "\x00" in a.arguments:
        raise ActionFailed("the arguments contain a NUL character, which no command line can hold")
    try:
        extra = shlex.split(a.arguments)
    except ValueError as err:
        raise ActionFailed(f"cannot parse arguments {a.arguments!r}: {err}") from err
    runner = ["bash"] if rel.endswith(".sh") else [ctx.sandbox.python]
    result = ctx.sandbox.exec(runner + [rel, *extra], timeout=ctx.task.limits.exec_timeout)
    output = command_output(result.stdout, result.stderr)
    outcome, status = command_outcome(ctx, result, "script")
    text = f"{status}{OUTPUT_FOLLOWS}\n{output}" if output else f"{status} It printed nothing."
    return ctx.observe(text, facts=output_facts(outcome, result.exit_code, output),
                       exit_code=result.exit_code, seconds=result.seconds, error=not result.ok)


def command_output(stdout: str, stderr: str) -> str:
    """A command's stdout then its stderr, as a terminal would leave them (Execute Script's
    and the Python REPL's observation)."""
    return settle_carriage_returns("\n".join(p.rstrip("\n") for p in (stdout, stderr) if p))


def command_outcome(ctx: ActionContext, result: ExecResult, what: str) -> tuple[str, str]:
    """How a command ended (``ActionFacts.outcome``) and the sentence that says so; ``what``
    is what ran ("script", "code")."""
    limits = ctx.task.limits
    if result.timed_out:
        return "timeout", f"The {what} was killed after its time limit of {limits.exec_timeout:g} s."
    if result.oom_killed:
        return "oom", f"The {what} was killed: it ran out of memory (limit {limits.memory_mb} MB)."
    if result.exit_code != 0:
        return "exit", f"The {what} exited with code {result.exit_code}."
    return "ok", EXECUTED


def output_facts(outcome: str, exit_code: int, output: str) -> ActionFacts:
    return ActionFacts(outcome=outcome, exit_code=exit_code, output_tail=last_lines(output)[-TAIL_CHARS:],
                       output_lines=len(output.splitlines()))


def inspect_lines(ctx: ActionContext, a: InspectArgs) -> Observation:
    if a.end_line_number < a.start_line_number:
        raise ActionFailed("end_line_number must not be before start_line_number")
    if a.end_line_number - a.start_line_number + 1 > MAX_INSPECT_LINES:
        raise ActionFailed(f"the number of lines to display is limited to {MAX_INSPECT_LINES}")
    with ctx.guard.fs.open_read(ctx.guard.relative(a.script_name)) as f:
        shown, count = _some_lines(f, a.start_line_number, a.end_line_number)
    header = LINES_HEADER.format(count=count) + "\n\n"
    facts = ActionFacts(lines_total=count, first_line=a.start_line_number if shown else None,
                        last_line=a.start_line_number + len(shown) - 1 if shown else None)
    return ctx.observe(header + "\n".join(line.decode("utf-8", "replace") for line in shown), facts=facts)


def _some_lines(f: BinaryIO, start: int, end: int) -> tuple[list[bytes], int]:
    """Lines ``start``..``end`` (1-based, each cut at ``MAX_LINE_BYTES``) and the file's line
    count, streamed: memory stays bounded however large the file or long its lines."""
    shown: list[bytes] = []
    pending, line_no, count, last = b"", 1, 0, b"\n"
    for chunk in iter(lambda: f.read(CHUNK), b""):
        count += chunk.count(b"\n")
        last = chunk[-1:]
        if line_no > end:
            continue
        pieces = (pending + chunk).split(b"\n")
        pending = pieces.pop()[:MAX_LINE_BYTES]
        for piece in pieces:
            if start <= line_no <= end:
                shown.append(piece[:MAX_LINE_BYTES])
            line_no += 1
    if pending and start <= line_no <= end:
        shown.append(pending)
    return shown, count + (last != b"\n")


def diff_facts(diff: str) -> ActionFacts:
    """A unified diff's size: lines added and removed in its hunks (the ``---``/``+++`` file
    header before the first ``@@`` is not counted; an added line ``++x`` reads ``+++x``)."""
    lines = diff.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith("@@")), len(lines))
    hunks = [x for x in lines[start:] if not x.startswith("@@")]
    return ActionFacts(added=sum(x.startswith("+") for x in hunks), removed=sum(x.startswith("-") for x in hunks))


def final_answer(ctx: ActionContext, a: FinalAnswerArgs) -> Observation:
    obs = ctx.observe("Final answer submitted. The run is over.")
    obs.done = True
    return obs


LOW_LEVEL_ACTIONS = [
    ActionSpec(LIST_FILES, "Use this to navigate the file system.", ListFilesArgs, list_files,
               brief="list a directory"),
    ActionSpec(READ_FILE, "Use this to read an existing file.", ReadFileArgs, read_file, brief="read a file"),
    ActionSpec(WRITE_FILE, "Use this to write a file. If the file already exists, it will be overwritten.",
               WriteFileArgs, write_file, brief="write a file (overwrites)"),
    ActionSpec(APPEND_FILE, "Use this to append content to the end of a file (the file is created if missing).",
               WriteFileArgs, append_file, brief="append to a file (created if missing)"),
    ActionSpec(COPY_FILE, "Use this to copy a file to a new location with a new name.",
               CopyFileArgs, copy_file, brief="copy a file"),
    ActionSpec(UNDO_EDIT, "Use this to undo the last edit of the python script.",
               UndoArgs, undo_edit, brief="undo the script's last edit"),
    ActionSpec(EXECUTE_SCRIPT, "Use this to execute the python script. The script must already exist.",
               ExecuteArgs, execute_script, brief="run an existing python script"),
    ActionSpec(INSPECT_LINES, f"Use this to inspect specific part of a python script precisely, "
               f"or the full content of a short script. The number of lines to display is limited to "
               f"{MAX_INSPECT_LINES} lines. This is especially helpful when debugging.",
               InspectArgs, inspect_lines, brief=f"show a script's lines start..end exactly (at most {MAX_INSPECT_LINES})"),
    ActionSpec(FINAL_ANSWER, "Use this to provide the final answer to the current task.",
               FinalAnswerArgs, final_answer, brief="submit your final answer"),
]
