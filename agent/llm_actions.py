"""LLM-backed actions, built on the low-level ones (reads and writes go through the context's
guard, its descriptor-based file I/O and backups, so Undo Edit Script works after an AI edit).
Like every handler they take an :class:`~environments.acting.actions.ActionContext`, not the
Environment.

The fast model reads (Understand File, Reflection, Retrieval); the edit model writes (Edit Script
(AI), Edit Script Segment (AI)). A model failure (retries spent) is returned as an error
observation and remembered in ``LLMActions.fatal``; the agent then ends the run with ``error``.
"""

from __future__ import annotations

import difflib
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import Field

from agent import prompts
from agent.calllog import Meter
from agent.models import Model, ModelError
from environments.acting.actions import (
    LONG,
    ActionArgs,
    ActionContext,
    ActionFailed,
    ActionSpec,
    Brief,
)
from environments.acting.low_level import (
    SCRIPT_BRIEF,
    UNDO_EDIT,
    File,
    LineNumber,
    WriteFileArgs,
    diff_facts,
    read_text,
    write_file,
)
from environments.acting.observation import Observation

NO_CHANGE = "(no change)"  # an edit's diff when the file came back as it was
UNDERSTAND_LIMIT = 4 << 20  # bytes of a file Understand File reads (chunked into model calls)
EDIT_LIMIT = 1 << 20  # bytes of a script an AI edit reads and writes back whole
FILE = "a valid file name with relative path to current directory if needed"


class UnderstandArgs(ActionArgs):
    file_name: File = Field(description=FILE)
    things_to_look_for: Annotated[str, Brief("what to look for and return, in detail"), LONG] = Field(
        description="a detailed description on what to look for and what should returned")


class EditArgs(ActionArgs):
    script_name: Annotated[str, Brief(SCRIPT_BRIEF + "; created empty if missing")] = Field(
        description=FILE + "; an empty file is created if it does not exist")
    edit_instruction: Annotated[str, Brief("how to edit it, step by step"), LONG] = Field(
        description="a detailed step by step description on how to edit it")
    save_name: File = Field(description=FILE)


class EditSegmentArgs(EditArgs):
    start_line_number: LineNumber = Field(description="a valid line number", ge=1)
    end_line_number: LineNumber = Field(description="a valid line number", ge=1)


class ReflectionArgs(ActionArgs):
    things_to_reflect_on: Annotated[str, Brief("what to reflect on and return, in detail"), LONG] = Field(
        description="a detailed description on what to reflect on and what should be returned")


class RetrievalArgs(ActionArgs):
    current_plan: Annotated[str, Brief("your current Research Plan and Status"), LONG] = Field(
        description="the current research plan and status")


class AppendLogArgs(ActionArgs):
    content: Annotated[str, Brief(""), LONG] = Field(
        description="a summary of the latest results to keep in the research log")


_CODE = re.compile(r"```[a-zA-Z0-9_+-]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str:
    blocks = _CODE.findall(text)
    if blocks:
        return max(blocks, key=len)
    return text.strip("\n") + "\n"


class LLMActions:
    """The models and log the LLM-backed actions share; one per agent."""

    def __init__(self, fast: Model, edit: Model, chunk_chars: int = 12_000) -> None:
        self.fast, self.edit, self.chunk_chars = fast, edit, chunk_chars
        self.meter = Meter(None)
        self.fatal: ModelError | None = None
        self.log_path = Path(tempfile.mkdtemp(prefix="labcoat-log-")) / "research_log.md"
        self.problem = ""

    def bind(self, ctx: ActionContext, meter: Meter) -> None:
        self.meter = meter
        self.problem = ctx.task.research_problem
        if ctx.run_folder is not None:
            self.log_path = ctx.run_folder / "research_log.md"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else "(empty)"

    def append_log(self, text: str) -> None:
        with self.log_path.open("a", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text.rstrip("\n") + "\n")

    def ask(self, model: Model, prompt: str, role: str) -> str:
        try:
            return self.meter.call(model, [{"role": "user", "content": prompt}], role=role).text
        except ModelError as err:
            self.fatal = err
            raise ActionFailed(f"the model call failed: {err}") from err

    # --- handlers --------------------------------------------------------------------------------

    def understand(self, ctx: ActionContext, a: UnderstandArgs) -> Observation:
        lines = read_text(ctx, a.file_name, UNDERSTAND_LIMIT).splitlines()
        chunks, start, size = [], 0, 0
        for i, line in enumerate(lines):
            size += len(line) + 1
            if size >= self.chunk_chars:
                chunks.append((start, i + 1))
                start, size = i + 1, 0
        if start < len(lines) or not chunks:
            chunks.append((start, len(lines)))
        answers = [self.ask(self.fast, prompts.UNDERSTAND_CHUNK.format(
            file_name=a.file_name, start=s + 1, end=e, content="\n".join(lines[s:e]),
            things=a.things_to_look_for), "understand") for s, e in chunks]
        if len(answers) == 1:
            return ctx.observe(answers[0])
        merged = "\n\n".join(f"Part {i + 1}:\n{t}" for i, t in enumerate(answers))
        return ctx.observe(self.ask(self.fast, prompts.UNDERSTAND_MERGE.format(
            file_name=a.file_name, things=a.things_to_look_for, answers=merged), "understand"))

    def _save(self, ctx: ActionContext, a: EditArgs, old: str, new: str) -> Observation:
        write_file(ctx, WriteFileArgs(file_name=a.save_name, content=new))
        diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                            f"a/{a.script_name}", f"b/{a.save_name}"))
        return ctx.observe(f"The edited file is saved to {a.save_name}. Here is the diff, please check "
                           f"if the edit is correct and desirable:\n\n{diff or NO_CHANGE}", facts=diff_facts(diff))

    def _read(self, ctx: ActionContext, name: str) -> str:
        """The script to edit ("" when missing); one too large to write back whole is refused."""
        st = ctx.guard.fs.lstat(ctx.guard.relative(name))
        if st is None:
            return ""
        if st.st_size > EDIT_LIMIT:
            raise ActionFailed(f"{name!r} is {st.st_size:,} bytes, too large for an AI edit "
                               f"(limit {EDIT_LIMIT:,}); edit a part with a script")
        return read_text(ctx, name, EDIT_LIMIT)

    def edit_script(self, ctx: ActionContext, a: EditArgs) -> Observation:
        ctx.guard.writable(a.save_name)  # refuse read-only targets before paying for a call
        old = self._read(ctx, a.script_name)
        reply = self.ask(self.edit, prompts.EDIT_SCRIPT.format(
            file_name=a.script_name, content=old, instruction=a.edit_instruction), "edit")
        return self._save(ctx, a, old, extract_code(reply))

    def edit_segment(self, ctx: ActionContext, a: EditSegmentArgs) -> Observation:
        ctx.guard.writable(a.save_name)
        old = self._read(ctx, a.script_name)
        lines = old.splitlines(True)
        if a.end_line_number < a.start_line_number or a.start_line_number > max(1, len(lines)):
            raise ActionFailed(f"lines {a.start_line_number}-{a.end_line_number} are not in "
                               f"{a.script_name} ({len(lines)} lines)")
        s, e = a.start_line_number - 1, min(a.end_line_number, len(lines))
        reply = self.ask(self.edit, prompts.EDIT_SEGMENT.format(
            file_name=a.script_name, start=s + 1, end=e, content="".join(lines[s:e]), total=len(lines),
            instruction=a.edit_instruction), "edit")
        new = "".join(lines[:s]) + extract_code(reply) + "".join(lines[e:])
        return self._save(ctx, a, old, new)

    def reflection(self, ctx: ActionContext, a: ReflectionArgs) -> Observation:
        return ctx.observe(self.ask(self.fast, prompts.REFLECTION.format(
            problem=self.problem, log=self.log(), things=a.things_to_reflect_on), "reflection"))

    def retrieval(self, ctx: ActionContext, a: RetrievalArgs) -> Observation:
        return ctx.observe(self.ask(self.fast, prompts.RETRIEVAL.format(
            problem=self.problem, plan=a.current_plan, log=self.log()), "retrieval"))

    def append(self, ctx: ActionContext, a: AppendLogArgs) -> Observation:
        self.append_log(f"\n[summary] {a.content}")
        return ctx.observe("Successfully appended the summary to the research log.")

    def specs(self) -> list[ActionSpec]:
        return [ActionSpec(r.name, r.description, r.args, getattr(self, r.handler), "llm", brief=r.brief)
                for r in ROWS]


@dataclass(frozen=True)
class _Row:
    """One model-backed action: its :class:`ActionSpec` less the handler, which is bound to an
    agent's :class:`LLMActions` (its models and log)."""

    name: str
    description: str
    args: type[ActionArgs]
    handler: str  # the LLMActions method
    brief: str


UNDERSTAND_FILE = "Understand File"
EDIT_SCRIPT_AI = "Edit Script (AI)"
EDIT_SEGMENT_AI = "Edit Script Segment (AI)"
REFLECTION = "Reflection"
RETRIEVAL = "Retrieval from Research Log"
APPEND_SUMMARY = "Append Summary to Research Log"

ROWS = (
    _Row(UNDERSTAND_FILE, "Use this to read the whole file and understand certain aspects. "
         "Describe what to look for and what should be returned; a long file is read in "
         "chunks and the answers merged.", UnderstandArgs, "understand",
         "an AI reads the whole file (in chunks if long) and answers what you ask"),
    _Row(EDIT_SCRIPT_AI, "Use this to do a relatively large but cohesive edit over a python "
         f"script. An AI edits the script by your instruction and returns the diff; {UNDO_EDIT} "
         "reverts it.", EditArgs, "edit_script",
         "an AI edits a python script by your instruction (a large but cohesive edit); "
         f"returns the diff; {UNDO_EDIT} reverts it"),
    _Row(EDIT_SEGMENT_AI, "Use this to edit only lines start..end of a long script "
         "by your instruction; the rest stays as it is. Returns the diff.", EditSegmentArgs, "edit_segment",
         f"like {EDIT_SCRIPT_AI}, for lines start..end of a long script only"),
    _Row(REFLECTION, "Use this to look over your past work (the research log) and reflect "
         "on something concrete.", ReflectionArgs, "reflection",
         "an AI reflects on something concrete in your past work (the research log)"),
    _Row(RETRIEVAL, "Use this to retrieve what the research log holds "
         "that matters for the current plan.", RetrievalArgs, "retrieval",
         "get what in the research log matters for the current plan"),
    _Row(APPEND_SUMMARY, "Use this to keep a summary of the latest results "
         "in the research log.", AppendLogArgs, "append",
         "add a summary of the latest results to the research log"),
)

#: every model-backed action (kind ``"llm"``), by name: what a person without a model cannot take
MODEL_ACTIONS: tuple[str, ...] = tuple(r.name for r in ROWS)
