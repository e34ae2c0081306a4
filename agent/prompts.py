"""Every prompt the agents send, as templates (``str.format`` fields in braces)."""

from __future__ import annotations

from environments.actions import ActionSpec

# --- the research agent (react mode) -----------------------------------------------------------

SYSTEM = """You are a research assistant. Tools:
{tools}

Research Problem: {problem}

Rules:
- Start with a high level plan in Research Plan and Status; revise it when needed. Keep it short and organised: 1) the plan, 2) which steps are done and which in progress, 3) the confirmed result of each done step. Only progress confirmed by an observation; nothing guessed; no actions inside it.
- Follow the plan as directly as possible. Give the supporting results and reasoning before any conclusion.
- Do not install packages.
- Mind the remaining budget shown each step; submit before it runs out.
- Final Answer ends the run and can be given once: first check that the goal is reached.

{format}"""

FORMAT = """Respond in exactly this format:
Reflection: what the last observation means; for an error, its cause and how to debug it.
Research Plan and Status: the full plan, with the confirmed status and results of each step.
Fact Check: each new statement in Research Plan and Status, marked guessed or confirmed by an observation (performance numbers only by running the code).
Thought: what you do next and why.
Action: one of the tool names
Action Input: a JSON object"""

TOOLS_FORMAT = """Each turn, first write, as plain text:
Reflection: What does the last observation mean?
Research Plan and Status: The full high level plan with the confirmed status of each step.
Fact Check: Whether each new statement is guessed or confirmed by an observation.
Thought: What you will do next and why.
Then call exactly one tool."""

STEP = """Remaining budget: {budget}

{history}Research Plan and Status (your latest):
{plan}

{recent}{ask}"""

ASK_REACT = "Now respond in the format above, with exactly one Action and its Action Input."
ASK_TOOLS = "Now write your Reflection, Research Plan and Status, Fact Check and Thought, then call one tool."
NO_PLAN = "(none yet: this is the first step; you know nothing about the problem so far)"

OLDER = "Earlier steps (one line each; the full record is in the research log and the trace):\n{lines}\n\n"
RECENT = "The most recent steps, in full:\n{steps}\n\n"
RECENT_STEP = """[Step {index}] Thought: {thought}
Action: {action}
Action Input: {args}
Observation:
```
{observation}
```"""

FORMAT_REMINDER = """Your response could not be used: {problem}
Respond again in the exact format, ending with:
Action: <one of the tool names>
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


def _fields(spec: ActionSpec) -> dict[str, str]:
    out = {}
    for name, f in spec.args_model.model_fields.items():
        desc = f.description or name
        if not f.is_required():
            desc += f" (optional, default {f.get_default(call_default_factory=True)!r})"
        out[name] = desc
    return out


def describe_action(spec: ActionSpec, glossary: dict[str, str] | None = None) -> str:
    """``- Name {arg, other=default}: description``, then each argument the glossary lacks."""
    own = {k: v for k, v in _fields(spec).items() if not glossary or glossary.get(k) != v}
    names = []
    for name, f in spec.args_model.model_fields.items():
        names.append(name if f.is_required() else f"{name}={f.get_default(call_default_factory=True)!r}")
    line = f"- {spec.name} {{{', '.join(names)}}}: {spec.description}"
    return line + "".join(f"\n    {k}: {v}" for k, v in own.items())


def describe_actions(specs: list[ActionSpec]) -> str:
    """All actions (Action Input is a JSON object with the named keys); an argument that means
    the same in several actions is explained once, after the list."""
    seen: dict[tuple[str, str], int] = {}
    for spec in specs:
        for item in _fields(spec).items():
            seen[item] = seen.get(item, 0) + 1
    glossary: dict[str, str] = {}
    for (k, v), n in sorted(seen.items(), key=lambda item: -item[1]):
        if n > 1 and k not in glossary:
            glossary[k] = v
    lines = ["Each action's Action Input is a JSON object with the keys in braces (key=default: optional)."]
    lines += [describe_action(s, glossary) for s in specs]
    if glossary:
        lines.append("Arguments used by several actions: " + "; ".join(f"{k}: {v}" for k, v in glossary.items()))
    return "\n".join(lines)
