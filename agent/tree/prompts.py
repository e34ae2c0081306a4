"""The draft / improve / debug prompts and the reading of a reply (pure: text in, text out).

AIDE's prompts, fitted to labcoat: the task is the research problem; the solution is the whole
solve script, run from the workspace folder in the sandbox; the metric is read from Validate
Submission where the task offers it, else from the ``validation <metric>: <number>`` line the
script must print (:func:`agent.baseline.read_metric` reads it). A reply is a short plan and
one fenced code block holding the complete script.
"""

from __future__ import annotations

import ast
import re

from agent.tree.nodes import Journal, Node

SYSTEM = """You are an expert machine learning engineer. You solve a research task by writing one complete Python script at a time; each script is run and scored, and the best one is kept.

Research problem:
{problem}"""

RULES = """Rules for the script:
- It is saved as {script} in the workspace folder and run there as `python {script}` with no arguments, in a sandbox without network access; install no packages.
- It must do the whole job on its own (load the data, train, write every output the research problem asks for) and finish within {timeout:g} seconds.
- It must hold out part of the training data and print its result on that split as a line `validation {metric}: <number>` ({direction} is better).

Respond with a short plan (3-5 sentences) and then the complete script in one ```python code block, with nothing after it."""

MEMORY = """Solutions tried so far (node: how it came about -> result):
{lines}"""
NO_MEMORY = "No solution has been tried yet."

STARTING_SCRIPT = """The workspace's starting script {script}:
```python
{code}
```"""

DRAFT = """Write a first solution: a simple, sound design that runs end to end (no ensembling or long hyperparameter searches yet). Make it different from the solutions tried so far."""

IMPROVE = """Here is the best solution so far (node {id}, validation {metric} {value}):
```python
{code}
```
Its output ended with:
```
{output}
```
Improve it with one single, atomic change (a better model, preprocessing, regularisation or schedule) whose effect can be measured; keep everything else as it is."""

DEBUG = """This solution (node {id}) failed:
```python
{code}
```
Its output ended with:
```
{error}
```
Find the cause and fix it; change nothing else. Your plan says what went wrong and how you fix it."""

CROSSOVER = """Here are two good solutions so far.
Node {id} (score {metric} {value}):
```python
{code}
```
Node {mate_id} (score {metric} {mate_value}):
```python
{mate_code}
```
Write one script that combines them: take the stronger parts of each (for example one's model and the other's preprocessing or schedule), so that it can beat both."""

TOOL = """The method tool `{tool}` was run in the workspace with the arguments {args}. Its JSON report:
```json
{report}
```
Write a solution that uses what this report shows (which methods or settings work, which do not){base}."""
TOOL_BASE = """, starting from this solution (node {id}, score {metric} {value}):
```python
{code}
```
"""

TOOL_ARGS = """Before the next solution is written, the method tool `{tool}` will be run in the workspace: {description}
Its arguments (JSON schema):
```json
{schema}
```
Reply with one JSON object of arguments for a short, informative run, and nothing else."""

FIX = """The script failed when it was run; its output ended with:
```
{error}
```
Find the cause and fix it; change nothing else. Reply with a short plan and the complete script in one ```python code block."""

SAME_SCRIPT = ("This script is the same as node {id}'s, which was already run. Write a different "
               "one: a short plan, then the whole script in one ```python code block.")

BUDGET = "Budget left: {budget}."

NO_CODE = ("Your reply held no ```python code block with the complete script. Reply again: a short "
           "plan, then the whole script in one ```python code block.")

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)


def memory(journal: Journal, metric: str, limit: int = 30) -> str:
    """One line a node (the latest ``limit``): what the model needs not to repeat itself."""
    lines = []
    for n in journal.nodes[len(journal.nodes) - limit:] if limit > 0 else []:
        origin = n.kind if n.parent is None else f"{n.kind} of node {n.parent}"
        plan = " ".join(n.plan.split())[:240] or "(no plan given)"
        result = (f"validation {metric} {n.metric:.6g}" if n.status == "good" and n.metric is not None
                  else f"failed: {last_line(n.error)}" if n.status == "buggy" else "not run")
        lines.append(f"- node {n.id} ({origin}): {plan} -> {result}")
    return MEMORY.format(lines="\n".join(lines)) if lines else NO_MEMORY


#: what is dropped, in order, until a prompt fits a small window: older memory, then (for a
#: debug or an improvement, which carry their parent's code) the starting script
SHRINK = [(30, True), (10, True), (3, True), (0, True), (0, False)]


def last_line(text: str) -> str:
    """The last non-empty line of an output (usually the exception), cut to 200 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(no output)"


def build_messages(*, kind: str, problem: str, script: str, starting_code: str, journal: Journal,
                   parent: Node | None, metric: str, higher_is_better: bool, timeout: float,
                   budget: str, memory_limit: int = 30, with_start: bool = True,
                   mate: Node | None = None, tool: str = "", tool_args: str = "",
                   report: str = "") -> list[dict[str, str]]:
    """The chat messages of one node's model call (``memory_limit`` latest nodes in the memory;
    the starting script left out when ``with_start`` is false, to fit a small window).
    The research pool adds two kinds: ``crossover`` (``parent`` and ``mate``, both scripts
    shown) and ``tool`` (the method ``tool``'s ``report``; ``parent`` optional)."""
    if kind == "draft":
        task = DRAFT
    elif kind == "tool" and parent is None:
        task = TOOL.format(tool=tool, args=tool_args, report=report, base="")
    elif parent is None:
        raise ValueError(f"a {kind} node needs a parent")
    elif kind == "improve":
        value = f"{parent.metric:.6g}" if parent.metric is not None else "unknown"
        task = IMPROVE.format(id=parent.id, metric=metric, value=value, code=parent.code,
                              output=parent.output or "(nothing)")
    elif kind == "debug":
        task = DEBUG.format(id=parent.id, code=parent.code, error=parent.error or "(nothing)")
    elif kind == "crossover":
        if mate is None:
            raise ValueError("a crossover needs two parents")
        task = CROSSOVER.format(id=parent.id, value=_value(parent), code=parent.code,
                                mate_id=mate.id, mate_value=_value(mate), mate_code=mate.code,
                                metric=metric)
    elif kind == "tool":
        base = (TOOL_BASE.format(id=parent.id, metric=metric, value=_value(parent), code=parent.code)
                if parent is not None else "")
        task = TOOL.format(tool=tool, args=tool_args, report=report, base=base)
    else:
        raise ValueError(f"unknown node kind {kind!r}")
    rules = RULES.format(script=script, timeout=timeout, metric=metric,
                         direction="higher" if higher_is_better else "lower")
    start = [STARTING_SCRIPT.format(script=script, code=starting_code)] if with_start else []
    parts = [memory(journal, metric, memory_limit), *start, task, rules, BUDGET.format(budget=budget)]
    return [{"role": "system", "content": SYSTEM.format(problem=problem.strip())},
            {"role": "user", "content": "\n\n".join(parts)}]


def _value(node: Node) -> str:
    return f"{node.metric:.6g}" if node.metric is not None else "unknown"


class NoCode(ValueError):
    """A reply without a script in it; the agent asks again (:data:`NO_CODE`)."""


def parse_reply(text: str) -> tuple[str, str]:
    """(plan, code) of a reply: the longest Python-looking fenced block is the script, the
    text before the first fence the plan. A reply that is bare Python (no fence) is taken
    whole, as AIDE does, so a model that forgets the fence loses nothing."""
    blocks = [(m.start(), m.group(2)) for m in _FENCE.finditer(text)
              if m.group(1).lower() in ("", "python", "py", "python3")]
    blocks = [(start, code) for start, code in blocks if code.strip()]
    if blocks:
        start = text.find("```")
        code = max(blocks, key=lambda b: len(b[1]))[1]
        return text[:start].strip(), code.rstrip() + "\n"
    stripped = text.strip()
    if "\n" in stripped and _is_python(stripped):
        return "", stripped + "\n"
    raise NoCode("no code block in the reply")


def _is_python(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True
