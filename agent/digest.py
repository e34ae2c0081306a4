"""Shorter forms of observations for the prompt, that keep what the agent acts on.

* :func:`fold_repeats`: program output often repeats one line shape with new numbers (a
  training log). A run of such lines is shown as its template once (a counter such as the
  epoch as its range), then one row of the other changing numbers per line. Nothing is
  dropped: the lines can be rebuilt exactly from it.
* :func:`gist`: one line per older step. The built-in actions' observations open with a fixed
  header (`The script has been executed. Here is the output:`, a diff's preamble, a file's
  length), so their first-and-last-lines gist is mostly header. For them the gist says what
  the observation reports instead: a run's last output lines (its final numbers or its error),
  an edit's size, a file's length. It reads those facts from the observation's data
  (:class:`environments.acting.observation.ActionFacts`, which the actions record); only a step
  recorded before the actions recorded facts (an older trace) has its wording read back. Any
  other action gets the generic gist.

Pure: text (and facts) in, text out; the context builder decides when each applies.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agent.llm_actions import EDIT_SCRIPT_AI, EDIT_SEGMENT_AI, NO_CHANGE
from agent.models.base import one_line
from environments.acting import low_level
from environments.acting.observation import CUT_MARK, ActionFacts, last_lines

# A number standing on its own: not part of a name (x_1, w2), a version (3.11.2) or a word.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?!\w|\.\d)")
SLOT = "{}"
FOLD_HEAD = '[{count} lines of the form "{template}"; each row below gives one line\'s {slot} values:]'
COUNT_HEAD = '[{count} lines of the form "{template}"]'
REPEAT_HEAD = "[the next line {count} times:]"
_LIKE_A_SLOT = re.compile(r"\{\}|\{\d")  # a line with these is never folded: they would read as slots

# Actions whose observation is a program's output, where logs repeat. File contents and
# diffs are never folded: the model reads them to edit them line by line.
PROGRAM_OUTPUT = frozenset({low_level.EXECUTE_SCRIPT})


def _shape(line: str) -> tuple[tuple[str, ...], list[str]]:
    """The line's text between numbers (its shape) and the numbers themselves."""
    return tuple(_NUMBER.split(line)), _NUMBER.findall(line)


def _counter(values: list[str]) -> str | None:
    """``{first..last}`` (or ``{first..last step d}``) for integers that go up or down by one
    fixed step, written plainly (so the text is rebuilt exactly); None for anything else."""
    if not all(v.isdigit() and str(int(v)) == v for v in values):
        return None
    ints = [int(v) for v in values]
    step = ints[1] - ints[0]
    if step == 0 or any(b - a != step for a, b in zip(ints, ints[1:])):
        return None
    return f"{{{ints[0]}..{ints[-1]}}}" if step == 1 else f"{{{ints[0]}..{ints[-1]} step {step}}}"


def _fold(lines: list[str], parts: tuple[str, ...]) -> list[str]:
    """One run of same-shape lines: a header with the template (constant numbers in place, a
    counter as its range, ``{}`` for the rest), then a row of the ``{}`` numbers per line."""
    rows = [_shape(line)[1] for line in lines]
    columns = list(zip(*rows))
    slots: list[int] = []
    pieces = [parts[0]]
    for k, column in enumerate(columns):
        if len(set(column)) == 1:
            pieces.append(column[0])
        elif (counter := _counter(list(column))) is not None:
            pieces.append(counter)
        else:
            pieces.append(SLOT)
            slots.append(k)
        pieces.append(parts[k + 1])
    template = "".join(pieces)
    if template == lines[0]:
        return [REPEAT_HEAD.format(count=len(lines)), lines[0]]
    if not slots:
        return [COUNT_HEAD.format(count=len(lines), template=template)]
    head = FOLD_HEAD.format(count=len(lines), template=template, slot=SLOT)
    return [head, *(" ".join(row[k] for k in slots) for row in rows)]


def fold_repeats(text: str, min_run: int = 5) -> str:
    """``text`` with every run of at least ``min_run`` consecutive lines that differ only in
    their numbers (or not at all) folded into a template and a table; 0 leaves it as it is."""
    if min_run <= 0 or text.count("\n") + 1 < min_run:
        return text
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        parts = _shape(lines[i])[0]
        j = i + 1
        while j < len(lines) and _shape(lines[j])[0] == parts:
            j += 1
        foldable = lines[i].strip() and not _LIKE_A_SLOT.search(lines[i])
        out += _fold(lines[i:j], parts) if foldable and j - i >= min_run else lines[i:j]
        i = j
    return "\n".join(out)


# --- one line per older step -------------------------------------------------------------------

def generic_gist(text: str, width: int) -> str:
    """The text on one line within ``width`` chars; a long multi-line text as its first and last
    lines, the last first served (a run's final numbers matter more than its opening line)."""
    lines = [x for x in text.strip().splitlines() if x.strip()]
    if len(lines) <= 2 or len(text) <= width:
        return one_line(text, width)
    last = one_line(lines[-1], width * 2 // 3)
    first = one_line(lines[0], max(20, width - len(last)))
    return f"{first}{' ' if first.endswith('…') else ' … '}{last}"


def _last_lines(lines: list[str], width: int) -> str:
    """As many of the last non-empty lines as fit in ``width``, in order, joined by `` | ``;
    the very last always (cut to fit)."""
    flat = "\n".join(" ".join(x.split()) for x in lines)
    return one_line(last_lines(flat, width, sep=" | "), width)


# A script's end when it was not a clean exit, as the older line says it.
OUTCOME = {"exit": "exit code {code}:", "timeout": "killed at its time limit:", "oom": "out of memory:"}


def _run_facts(f: ActionFacts, width: int) -> str | None:
    """Execute Script: how it ended when not cleanly, then the output's last lines."""
    if f.outcome is None:
        return None
    status = OUTCOME[f.outcome].format(code=f.exit_code) + " " if f.outcome in OUTCOME else ""
    tail = _last_lines((f.output_tail or "").splitlines(), max(20, width - len(status)))
    return (status + tail if tail else status + "printed nothing").strip()


def _edit_facts(f: ActionFacts, width: int) -> str | None:
    """Edit Script (AI) and its segment variant: how many lines the diff adds and removes."""
    if f.added is None or f.removed is None:
        return None
    if not f.added and not f.removed:
        return "no change"
    return f"diff +{f.added} -{f.removed} lines{' (the diff shown was cut)' if f.truncated else ''}"


def _inspect_facts(f: ActionFacts, width: int) -> str | None:
    """Inspect Script Lines: how long the file is (which lines were asked for is in the args)."""
    return None if f.lines_total is None else f"shown; the file has {f.lines_total} lines"


# --- older traces: the same facts read back from the wording -------------------------------------

def _run_gist(observation: str, width: int) -> str | None:
    """Execute Script: its status when the script failed, then the output's last lines."""
    head, _, body = observation.partition("\n")
    if not body.strip() or not head.endswith(low_level.OUTPUT_FOLLOWS):
        return None
    status = head.removesuffix(low_level.OUTPUT_FOLLOWS).strip()
    status = "" if status == low_level.EXECUTED else status + " "
    return status + _last_lines(body.splitlines(), max(20, width - len(status)))


def _edit_gist(observation: str, width: int) -> str | None:
    """Edit Script (AI) and its segment variant: how many lines the diff adds and removes."""
    lines = observation.splitlines()
    if lines and lines[-1] == NO_CHANGE:
        return "no change"
    start = next((i + 1 for i, x in enumerate(lines) if x.startswith("+++ ")), None)
    if start is None:  # not a diff: an error message, say
        return None
    added = sum(1 for x in lines[start:] if x.startswith("+"))
    removed = sum(1 for x in lines[start:] if x.startswith("-"))
    partly = " (the diff shown was cut)" if CUT_MARK in observation else ""
    return f"diff +{added} -{removed} lines{partly}"


_LINES_HEADER = re.compile(re.escape(low_level.LINES_HEADER).replace(re.escape("{count}"), r"(\d+)"))


def _inspect_gist(observation: str, width: int) -> str | None:
    """Inspect Script Lines: how long the file is (which lines were asked for is in the args)."""
    found = _LINES_HEADER.match(observation)
    return f"shown; the file has {found.group(1)} lines" if found else None


Rule = tuple[Callable[[ActionFacts, int], str | None], Callable[[str, int], str | None]]
_GISTS: dict[str, Rule] = {
    low_level.EXECUTE_SCRIPT: (_run_facts, _run_gist),
    EDIT_SCRIPT_AI: (_edit_facts, _edit_gist),
    EDIT_SEGMENT_AI: (_edit_facts, _edit_gist),
    low_level.INSPECT_LINES: (_inspect_facts, _inspect_gist),
}


def gist(action: str, observation: str, fallback: str, width: int, data: dict[str, Any] | None = None) -> str:
    """One line within about ``width`` chars saying what an observation of ``action`` reports:
    from its facts (``data``), or, for a step recorded without them, from its wording; the
    generic gist of ``fallback`` (its summary, or itself) when the action has no rule or the
    observation reports none of its facts (an error message, say)."""
    rule = _GISTS.get(action)
    found = None
    if rule is not None:
        facts, wording = rule
        found = facts(ActionFacts.model_validate(data), width) if data is not None else wording(observation, width)
    return one_line(found, width) if found is not None else generic_gist(fallback, width)
