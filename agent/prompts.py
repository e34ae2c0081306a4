"""Every prompt the agents send, as templates (``str.format`` fields in braces)."""

from __future__ import annotations

from pydantic.fields import FieldInfo

from environments.acting.actions import ActionSpec, brief_of

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

# The step message only grows between collapses (see agent.context): each step is one entry that
# opens with its line and its plan's change (all a collapsed step shows) and, while whole, goes
# on with its thought, input and observation; what changes every step (the budget) comes last,
# so each step's prompt opens with the previous one's and providers' prefix caches serve all but
# the new step, the budget and the closing request (which a small model needs last: without it
# the 0.5B model edits before it has looked at anything).
STEP = """{history}{plan}Budget left: {budget}
{ask}"""
PLAN = "Research Plan and Status"
PLAN_LATEST = "Your latest Research Plan and Status:\n{plan}"
# A plan told against the one before it in the prompt ({head}: whose plan it is).
PLAN_WHOLE = "{head}:\n{plan}"
PLAN_SAME = "{head}: unchanged."
PLAN_ADDS = "{head} adds:\n{lines}"
PLAN_EDITS = "{head} changes lines:\n{lines}"
PLAN_REWRITTEN = "{head}, rewritten:\n{plan}"
LATEST_HEAD = "Your latest Research Plan and Status"
AFTER_HEAD = "Plan after step {index}"
STEP_HEAD = "Plan"

ASK_REACT = "Now respond in the format above, with one action."
ASK_TOOLS = "Now write your Reflection, Research Plan and Status, Fact Check and Thought, then call one tool."
NO_PLAN = "(none yet: this is the first step; you know nothing about the problem so far)"

HISTORY_HEAD = "Steps so far (the older ones a line each; the research log has more):\n"
STEP_ENTRY = "Step {index}: {line}\n{plan}"
STEP_DETAIL = """Thought: {thought}
Action Input: {args}
Observation:
```
{observation}
```

"""

FORMAT_REMINDER = """Your response could not be used: {problem}
Respond again in the exact format, ending with:
Action: <one of the action names>
Action Input: <a JSON object>"""

TOOL_REMINDER = "Your response called no tool. {problem} Call exactly one of the tools now."

INVALID_INPUT = """{invalid}
The environment was not called. Respond again with a corrected Action Input."""

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
# labcoat's own wording of an action and its arguments is on the action itself (ActionSpec.brief,
# an argument's Brief: environments.acting.actions), next to MLAgentBench's wording (the descriptions, which
# tools mode, LangChain and MLAgentBench-style usage keep); an action or argument without one shows
# its description.


def field_text(name: str, info: FieldInfo) -> str:
    """An argument's meaning in the prompt: its brief ("" where its name and its action say it
    all), else its description, else its name."""
    found = brief_of(info)
    return found if found is not None else info.description or name


def _fields(spec: ActionSpec) -> dict[str, str]:
    """Each argument's meaning (see :func:`field_text`); defaults show in the braces."""
    return {name: field_text(name, f) for name, f in spec.args_model.model_fields.items()}


def _signature(spec: ActionSpec) -> str:
    """``{arg, other=default}``: the JSON keys, optional ones with their default."""
    names = [name if f.is_required() else f"{name}={f.get_default(call_default_factory=True)!r}"
             for name, f in spec.args_model.model_fields.items()]
    return "{" + ", ".join(names) + "}"


def _purpose(spec: ActionSpec) -> str:
    """The action's brief, or its description without MLAgentBench's "Use this to " opener."""
    return spec.brief if spec.brief is not None else spec.description.removeprefix("Use this to ")


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
    return f"- {spec.name} {_signature(spec)}: {_purpose(spec)}{notes}"


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
