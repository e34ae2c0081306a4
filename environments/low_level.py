"""The low-level actions, with MLAgentBench's names and argument names.

Every file action goes through the environment's :class:`~environments.paths.PathGuard`;
every script runs through the sandbox. Handlers raise ``PathRefused``/``ActionFailed`` for
the actor's mistakes; the environment turns those into error observations.
"""

from __future__ import annotations

import shlex
import shutil
from typing import TYPE_CHECKING

from pydantic import Field

from environments.actions import ActionArgs, ActionSpec
from environments.observation import Observation, settle_carriage_returns

if TYPE_CHECKING:
    from environments.environment import Environment

MAX_INSPECT_LINES = 100
# Observation wording (MLAgentBench's), named so the agent's history gists can read it back.
EXECUTED = "The script has been executed."
OUTPUT_FOLLOWS = " Here is the output:"
LINES_HEADER = "Here are the lines (the file ends at line {count}):"


class ActionFailed(RuntimeError):
    """The action was valid but could not be done; the message is shown to the actor."""


class ListFilesArgs(ActionArgs):
    dir_path: str = Field(description='a valid relative path to a directory, such as "." or "folder1/folder2"')


class ReadFileArgs(ActionArgs):
    file_name: str = Field(description="a valid file name with relative path to current directory if needed")


class WriteFileArgs(ActionArgs):
    file_name: str = Field(description="a valid file name with relative path to current directory if needed")
    content: str = Field(description="the content to be written to the file")


class CopyFileArgs(ActionArgs):
    source: str = Field(description="a valid file name with relative path to current directory if needed")
    destination: str = Field(description="a valid file name with relative path to current directory if needed")


class UndoArgs(ActionArgs):
    script_name: str = Field(description="a valid python script name with relative path to current directory if needed")


class ExecuteArgs(ActionArgs):
    script_name: str = Field(description="a valid python script name with relative path to current directory if needed")
    arguments: str = Field("", description="command-line arguments for the script, as one string")


class InspectArgs(ActionArgs):
    script_name: str = Field(description="a valid python script name with relative path to current directory if needed")
    start_line_number: int = Field(description="a valid line number", ge=1)
    end_line_number: int = Field(description="a valid line number", ge=1)


class FinalAnswerArgs(ActionArgs):
    final_answer: str = Field(description="a detailed description on the final answer")


def list_files(env: Environment, a: ListFilesArgs) -> Observation:
    path = env.guard.resolve(a.dir_path)
    if not path.is_dir():
        raise ActionFailed(f"{a.dir_path!r} is not a directory in the workspace")
    entries = []
    for child in sorted(path.iterdir(), key=lambda p: p.name):
        entries.append(child.name + ("/" if child.is_dir() else ""))
    return env.observe("\n".join(entries) if entries else "(empty directory)")


def read_file(env: Environment, a: ReadFileArgs) -> Observation:
    path = env.guard.resolve(a.file_name)
    if not path.is_file():
        raise ActionFailed(f"cannot read {a.file_name!r}: no such file in the workspace")
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ActionFailed(f"{a.file_name!r} is a binary file ({len(data)} bytes); inspect it with a script")
    return env.observe(data.decode("utf-8", "replace"))


def _write(env: Environment, name: str, content: str, append: bool) -> Observation:
    path = env.guard.resolve(name, write=True)
    if path.is_dir():
        raise ActionFailed(f"{name!r} is a directory")
    env.backups.save(env.guard.relative(name), path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w") as f:
        f.write(content)
    verb = "appended to" if append else "written to"
    return env.observe(f"File {name} {verb} successfully.")


def write_file(env: Environment, a: WriteFileArgs) -> Observation:
    return _write(env, a.file_name, a.content, append=False)


def append_file(env: Environment, a: WriteFileArgs) -> Observation:
    return _write(env, a.file_name, a.content, append=True)


def copy_file(env: Environment, a: CopyFileArgs) -> Observation:
    src = env.guard.resolve(a.source)
    if not src.is_file():
        raise ActionFailed(f"cannot copy {a.source!r}: no such file in the workspace")
    dst = env.guard.resolve(a.destination, write=True)
    if dst.is_dir():
        raise ActionFailed(f"{a.destination!r} is a directory; give a file name")
    env.backups.save(env.guard.relative(a.destination), dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return env.observe(f"File {a.source} copied to {a.destination}")


def undo_edit(env: Environment, a: UndoArgs) -> Observation:
    rel = env.guard.relative(a.script_name)
    path = env.guard.resolve(a.script_name, write=True)
    if not env.backups.restore(rel, path):
        raise ActionFailed(f"there is no earlier version of {a.script_name!r} to go back to")
    content = path.read_text(errors="replace") if path.exists() else "(the file did not exist before; removed)"
    return env.observe(f"Content of {a.script_name} after undo the most recent edit:\n{content}")


def execute_script(env: Environment, a: ExecuteArgs) -> Observation:
    path = env.guard.resolve(a.script_name)
    if not path.is_file():
        raise ActionFailed(f"cannot execute {a.script_name!r}: no such file in the workspace")
    rel = env.guard.relative(a.script_name)
    try:
        extra = shlex.split(a.arguments)
    except ValueError as err:
        raise ActionFailed(f"cannot parse arguments {a.arguments!r}: {err}") from err
    runner = ["bash"] if rel.endswith(".sh") else [env.sandbox.python]
    result = env.sandbox.exec(runner + [rel, *extra], timeout=env.task.limits.exec_timeout)
    parts = [result.stdout]
    if result.stderr:
        parts.append(result.stderr)
    output = settle_carriage_returns("\n".join(p.rstrip("\n") for p in parts if p))
    if result.timed_out:
        status = f"The script was killed after its time limit of {env.task.limits.exec_timeout:g} s."
    elif result.oom_killed:
        status = f"The script was killed: it ran out of memory (limit {env.task.limits.memory_mb} MB)."
    elif result.exit_code != 0:
        status = f"The script exited with code {result.exit_code}."
    else:
        status = EXECUTED
    text = f"{status}{OUTPUT_FOLLOWS}\n{output}" if output else f"{status} It printed nothing."
    return env.observe(text, exit_code=result.exit_code, seconds=result.seconds,
                       error=not result.ok)


def inspect_lines(env: Environment, a: InspectArgs) -> Observation:
    path = env.guard.resolve(a.script_name)
    if not path.is_file():
        raise ActionFailed(f"cannot inspect {a.script_name!r}: no such file in the workspace")
    if a.end_line_number < a.start_line_number:
        raise ActionFailed("end_line_number must not be before start_line_number")
    if a.end_line_number - a.start_line_number + 1 > MAX_INSPECT_LINES:
        raise ActionFailed(f"the number of lines to display is limited to {MAX_INSPECT_LINES}")
    lines = path.read_text(errors="replace").splitlines()
    shown = lines[a.start_line_number - 1 : a.end_line_number]
    header = LINES_HEADER.format(count=len(lines)) + "\n\n"
    return env.observe(header + "\n".join(shown))


def final_answer(env: Environment, a: FinalAnswerArgs) -> Observation:
    obs = env.observe("Final answer submitted. The run is over.")
    obs.done = True
    return obs


LOW_LEVEL_ACTIONS = [
    ActionSpec("List Files", "Use this to navigate the file system.", ListFilesArgs, list_files),
    ActionSpec("Read File", "Use this to read an existing file.", ReadFileArgs, read_file),
    ActionSpec("Write File", "Use this to write a file. If the file already exists, it will be overwritten.",
               WriteFileArgs, write_file),
    ActionSpec("Append File", "Use this to append content to the end of a file (the file is created if missing).",
               WriteFileArgs, append_file),
    ActionSpec("Copy File", "Use this to copy a file to a new location with a new name.",
               CopyFileArgs, copy_file),
    ActionSpec("Undo Edit Script", "Use this to undo the last edit of the python script.",
               UndoArgs, undo_edit),
    ActionSpec("Execute Script", "Use this to execute the python script. The script must already exist.",
               ExecuteArgs, execute_script),
    ActionSpec("Inspect Script Lines", f"Use this to inspect specific part of a python script precisely, "
               f"or the full content of a short script. The number of lines to display is limited to "
               f"{MAX_INSPECT_LINES} lines. This is especially helpful when debugging.",
               InspectArgs, inspect_lines),
    ActionSpec("Final Answer", "Use this to provide the final answer to the current task.",
               FinalAnswerArgs, final_answer),
]
