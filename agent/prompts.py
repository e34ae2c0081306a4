"""Every prompt the agents send, as templates (``str.format`` fields in braces)."""

from __future__ import annotations

from environments.actions import ActionSpec

# --- the research agent (react mode) -----------------------------------------------------------

SYSTEM = """You are a research assistant.
{tools}

Research Problem: {problem}

Rules: follow your plan as directly as possible; give the supporting results and reasoning before any conclusion; install no packages; submit before the budget runs out; Final Answer ends the run, so first check that the goal is reached.

{format}"""

ACTIONS_HEAD = ("Actions (Action Input: a JSON object with the keys in braces, key=default optional; "
                "paths are relative to the workspace):")
NATIVE_TOOLS = "Your actions are the tools given with this conversation."

FIELD_GUIDE = """Reflection: what the last observation means; for an error, its cause and how to debug it.
Research Plan and Status: the full high level plan (make one first, revise it as needed), short and organised: each step done or in progress, with its result. Only progress an observation confirmed; nothing guessed; no actions.
Fact Check: each new statement in the plan: guessed, or confirmed by an observation (performance numbers only by running the code).
Thought: what you do next and why."""

FORMAT = f"""Respond in exactly this format:
{FIELD_GUIDE}
Action: one of the action names
Action Input: a JSON object"""

TOOLS_FORMAT = f"""Each turn, first write, as plain text:
{FIELD_GUIDE}
Then call exactly one tool."""

# What changes every step comes last (the plan, the budget), so each step's prompt opens with
# the previous one's: providers' prefix caches then serve all but the tail (see agent.context).
STEP = """{history}{recent}{plan}

Budget left: {budget}
{ask}"""
PLAN_LATEST = "Your latest Research Plan and Status:\n{plan}"
PLAN_AT = "Your Research Plan and Status after step {index}:\n{plan}\n\n"
PLAN_SAME = "Your latest Research Plan and Status: as after step {index}."
PLAN_ADDS = "Your latest Research Plan and Status: as after step {index}, then:\n{lines}"
PLAN_EDITS = "Your latest Research Plan and Status: as after step {index}, with these lines changed:\n{lines}"
PLAN_REWRITTEN = "Your latest Research Plan and Status (it replaces the one after step {index}):\n{plan}"

ASK_REACT = "Now respond in the format above, with one action."
ASK_TOOLS = "Now write your Reflection, Research Plan and Status, Fact Check and Thought, then call one tool."
NO_PLAN = "(none yet: this is the first step; you know nothing about the problem so far)"

OLDER = "Earlier steps (the research log has more):\n{lines}\n\n"
RECENT = "Latest steps:\n{steps}\n\n"
RECENT_STEP = """[Step {index}] Thought: {thought}
Action: {action}
Action Input: {args}
Observation:
```
{observation}
```"""

FORMAT_REMINDER = """Your response could not be used: {problem}
Respond again in the exact format, ending with:
Action: <one of the action names>
Action Input: <a JSON object>"""

TOOL_REMINDER = "Your response called no tool. {problem} Call exactly one of the tools now."

INVALID_INPUT = """The action input for {action} is invalid: {problem}
The environment was not called. Usage:
Action: {action}
Action Input: {usage}
Respond again with a corrected Action Input."""

UNKNOWN_ACTION = """There is no action named {action!r}.{hint} The environment was not called.
Valid actions: {names}. Respond again with one of them."""

SUMMARIZE_OBSERVATION = """Your action was:
{action}

Its observation is too long to keep in full ({chars} characters):
```
{observation}
```

Summarize the observation objectively in at most {words} words. Keep every number, metric, error message, file name and line number that matters for the research; drop repetition and progress bars. Do not guess anything the observation does not show."""

# --- LLM-backed actions -------------------------------------------------------------------------

UNDERSTAND_CHUNK = """Here is part of the file {file_name} (lines {start} to {end}):
```
{content}
```
Here is what to look for and what to return: {things}
Answer from this part only, citing line numbers; say plainly when this part holds nothing relevant."""

UNDERSTAND_MERGE = """These are answers about successive parts of {file_name}, for: {things}

{answers}

Merge them into one cohesive answer about the whole file, keeping line numbers and dropping "nothing found" parts."""

EDIT_SCRIPT = """Here is the file {file_name}:
```
{content}
```
Edit it as follows: {instruction}

Return the complete edited file, and nothing else, in one ```python code block."""

EDIT_SEGMENT = """Here are lines {start} to {end} of {file_name}:
```
{content}
```
(The file has {total} lines; the text before and after this segment stays as it is.)
Edit this segment as follows: {instruction}

Return the complete edited segment, and nothing else, in one ```python code block."""

REFLECTION = """Research problem: {problem}

Research log so far:
{log}

Reflect on the following, concretely and briefly: {things}"""

RETRIEVAL = """Research problem: {problem}

Current plan: {plan}

Research log:
{log}

Summarise the parts of the log that matter for the current plan: results, files changed, what worked and what failed, with numbers."""


# --- the action list -----------------------------------------------------------------------------
# labcoat's own wording of the built-in actions and arguments, keyed by their ActionSpec text
# (MLAgentBench's wording, which tools mode, LangChain and MLAgentBench-style usage keep). Keyed by
# the full text, so a changed description is shown as it now is, never as a stale brief.
# Every fact stays: what the action does, its limits, what it returns.

_FILE = "a valid file name with relative path to current directory if needed"
_SCRIPT = "a valid python script name with relative path to current directory if needed"
_DETAILED = "a detailed description on "
_SCRIPT_BRIEF = "a python script"

BRIEF = {
    "Use this to navigate the file system.": "list a directory",
    "Use this to read an existing file.": "read a file",
    "Use this to write a file. If the file already exists, it will be overwritten.": "write a file (overwrites)",
    "Use this to append content to the end of a file (the file is created if missing).":
        "append to a file (created if missing)",
    "Use this to copy a file to a new location with a new name.": "copy a file",
    "Use this to undo the last edit of the python script.": "undo the script's last edit",
    "Use this to execute the python script. The script must already exist.": "run an existing python script",
    "Use this to inspect specific part of a python script precisely, or the full content of a short "
    "script. The number of lines to display is limited to 100 lines. This is especially helpful when "
    "debugging.": "show a script's lines start..end exactly (at most 100)",
    "Use this to provide the final answer to the current task.": "submit your final answer",
    "Use this to read the whole file and understand certain aspects. Describe what to look for and what "
    "should be returned; a long file is read in chunks and the answers merged.":
        "an AI reads the whole file (in chunks if long) and answers what you ask",
    "Use this to do a relatively large but cohesive edit over a python script. An AI edits the script by "
    "your instruction and returns the diff; Undo Edit Script reverts it.":
        "an AI edits a python script by your instruction (a large but cohesive edit); returns the diff; "
        "Undo Edit Script reverts it",
    "Use this to edit only lines start..end of a long script by your instruction; the rest stays as it "
    "is. Returns the diff.": "like Edit Script (AI), for lines start..end of a long script only",
    "Use this to look over your past work (the research log) and reflect on something concrete.":
        "an AI reflects on something concrete in your past work (the research log)",
    "Use this to retrieve what the research log holds that matters for the current plan.":
        "get what in the research log matters for the current plan",
    "Use this to keep a summary of the latest results in the research log.":
        "add a summary of the latest results to the research log",
    # arguments
    'a valid relative path to a directory, such as "." or "folder1/folder2"':
        'a directory ("." is the top)',
    _FILE: "",  # the argument's name says it (file_name, source, ...); paths: see ACTIONS_HEAD
    _FILE + "; an empty file is created if it does not exist": _SCRIPT_BRIEF + "; created empty if missing",
    _SCRIPT: _SCRIPT_BRIEF,
    "the content to be written to the file": "",  # the action says what the content is
    "a summary of the latest results to keep in the research log": "",
    "command-line arguments for the script, as one string": "its command-line arguments, as one string",
    "a valid line number": "a line number (the first is 1)",
    _DETAILED + "the final answer": "the answer, in detail",
    _DETAILED + "what to look for and what should returned": "what to look for and return, in detail",
    "a detailed step by step description on how to edit it": "how to edit it, step by step",
    _DETAILED + "what to reflect on and what should be returned": "what to reflect on and return, in detail",
    "the current research plan and status": "your current Research Plan and Status",
}


def brief(text: str) -> str:
    """labcoat's shorter wording of a built-in description ("" where the argument's name and
    its action say it all); any other text as it is."""
    return BRIEF.get(text, text)


def _fields(spec: ActionSpec) -> dict[str, str]:
    """Each argument's description (its name when it has none); defaults show in the braces."""
    return {name: brief(f.description or name) for name, f in spec.args_model.model_fields.items()}


def _signature(spec: ActionSpec) -> str:
    """``{arg, other=default}``: the JSON keys, optional ones with their default."""
    names = [name if f.is_required() else f"{name}={f.get_default(call_default_factory=True)!r}"
             for name, f in spec.args_model.model_fields.items()]
    return "{" + ", ".join(names) + "}"


def _purpose(description: str) -> str:
    """The brief, or the description without MLAgentBench's "Use this to " opener."""
    return brief(description).removeprefix("Use this to ")


def _glossary(specs: list[ActionSpec]) -> dict[str, str]:
    """Each argument name's most common description (the first seen on a tie)."""
    counts: dict[str, dict[str, int]] = {}
    for spec in specs:
        for name, desc in _fields(spec).items():
            per = counts.setdefault(name, {})
            per[desc] = per.get(desc, 0) + 1
    return {name: max(per, key=per.__getitem__) for name, per in counts.items()}


def _variant(desc: str, common: str) -> str:
    """What an argument's own description adds to the common one after a ``;`` (``also ...``);
    anything else (a refinement such as "learning rate on the pixels") in full."""
    rest = desc[len(common):] if desc.startswith(common) else ""
    return "also " + rest.lstrip("; ") if rest.startswith(";") else desc


def describe_action(spec: ActionSpec, glossary: dict[str, str] | None = None) -> str:
    """``- Name {arg, other=default}: what it does``, plus each argument whose meaning here
    differs from the glossary's (the glossary explains every other one once for all actions)."""
    glossary = glossary or {}
    own = [f"{k}: {_variant(v, glossary[k]) if k in glossary else v}"
           for k, v in _fields(spec).items() if glossary.get(k) != v]
    notes = f" ({'; '.join(own)})" if own else ""
    return f"- {spec.name} {_signature(spec)}: {_purpose(spec.description)}{notes}"


def describe_arguments(glossary: dict[str, str]) -> str:
    """One entry per distinct description, naming every argument it explains (an argument
    without a description, whose "description" is its name, needs no entry); "" for none."""
    names: dict[str, list[str]] = {}
    for name, desc in glossary.items():
        if desc not in (name, ""):
            names.setdefault(desc, []).append(name)
    entries = "; ".join(f"{', '.join(ns)}: {desc}" for desc, ns in names.items())
    return f"Arguments: {entries}" if entries else ""


def describe_actions(specs: list[ActionSpec]) -> str:
    """Every action on one line (name, JSON keys, what it does), then every argument's meaning,
    each description written once however many actions or arguments share it."""
    glossary = _glossary(specs)
    arguments = describe_arguments(glossary)
    lines = [ACTIONS_HEAD, *(describe_action(s, glossary) for s in specs)]
    return "\n".join([*lines, arguments] if arguments else lines)
