"""The prompt builder: what the model sees each step, within a small, steady number of tokens.

The static prefix (instructions, tool descriptions, research problem) is the system message,
identical every step so providers can cache it. The step message is laid out so that it opens
as the previous step's did (providers' prefix caches, llama.cpp's KV cache): one line for each
older step, the Research Plan and Status as of the last of them, the latest steps whole, and only
then what changes every step: the plan's change since, the budget left, the request. The history
is append-mostly: a step is written whole once and stays as it was written while later steps are
appended after it, until the whole steps' observations pass ``whole_chars`` (or their number
``keep_last + collapse_every - 1``); then all but the last ``keep_last`` become one-line steps in
one block, so each rewrite of the middle is rare and amortised over many steps (rewriting the
latest observation from whole to summary every step, or collapsing a few steps at a time, breaks
the prefix each time). Observations longer than ``summarize_over`` characters are summarised by
the fast model when they are recorded (see :mod:`agent.research`): a step appended since the
last collapse shows its observation whole up to ``latest_whole`` characters (the model acts on
it), a step kept whole through a collapse shows its summary. A script's output is shown with its
repeated lines folded (:func:`agent.digest.fold_repeats`, lossless), and older steps say what
their observation reported (:func:`agent.digest.gist`, from the observation's facts).
A model with a small window gets the richest context that fits it (:func:`fit_messages`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from agent import digest, prompts
from environments.observation import cap_text
from environments.runs import RunMeta


class ContextSettings(BaseModel):
    keep_last: int = Field(1, ge=0, description="steps left whole (thought, action, input, observation) "
                           "when the older ones collapse to one line each; more are whole between "
                           "collapses (see whole_chars)")
    summarize_over: int = Field(1500, ge=0, description="observations longer than this (chars) are "
                                "summarised by the fast model; a step kept whole through a collapse "
                                "shows the summary; 0 = never")
    latest_whole: int = Field(5000, ge=0, description="a step appended since the last collapse shows "
                              "its observation whole up to this many chars (MLAgentBench's threshold), "
                              "else as its summary")
    whole_chars: int = Field(3600, ge=0, description="the whole steps' observations grow in place up to "
                             "this many chars; past it, all but keep_last collapse at once (a small "
                             "window lowers it)")
    summary_words: int = Field(200, ge=20)
    fold_repeats: int = Field(5, ge=0, description="a program's output lines that differ only in their "
                              "numbers, this many or more in a row, are shown as one template and a "
                              "table of the numbers (nothing is lost); 0 = never")
    older_lines: int = Field(40, ge=0, description="older steps listed, one line each")
    line_chars: int = Field(100, ge=40)
    args_whole: int = Field(100_000, ge=200, description="a whole step's action input is shown "
                            "within this many chars (head and tail); a small window lowers it")
    collapse_every: int = Field(10, ge=1, description="at most keep_last + collapse_every - 1 steps are "
                                "whole: with 1, exactly keep_last; larger, rarer collapses keep each "
                                "prompt a prefix of the next for longer (providers' prefix caches)")
    format_retries: int = Field(3, ge=0, description="re-asks after an unusable response")


@dataclass
class AgentStep:
    index: int
    action: str
    args: dict[str, Any] | str
    observation: str
    error: bool = False
    thought: str = ""
    summary: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] | None = None  # the observation's facts (Observation.data); None in older traces
    _folded: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    def shown(self, latest: bool, s: ContextSettings) -> str:
        """The observation whole, or its summary: see the module docstring for when. ``latest``:
        appended since the last collapse (the model may still act on it whole)."""
        if s.fold_repeats not in self._folded:  # every prompt re-lays the history: fold once
            self._folded[s.fold_repeats] = whole(self.action, self.observation, s)
        text = self._folded[s.fold_repeats]
        if self.summary is None or (latest and len(text) <= s.latest_whole):
            return text
        return f"(summarised) {self.summary}"


def whole(action: str, observation: str, s: ContextSettings) -> str:
    """An observation as the prompt shows it whole: a program's output with its repeated lines
    folded (:func:`agent.digest.fold_repeats`), anything else as it is."""
    return digest.fold_repeats(observation, s.fold_repeats) if action in digest.PROGRAM_OUTPUT else observation


def needs_summary(observation: str, s: ContextSettings) -> bool:
    """Whether an observation gets a summary when it is recorded (it is long)."""
    return bool(s.summarize_over) and len(observation) > s.summarize_over


def _args_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def older_line(s: AgentStep, width: int) -> str:
    """``7. Execute Script(train.py) -> <what the observation reports>`` within about ``width``
    chars (:func:`agent.digest.gist`)."""
    values = [str(v) for v in s.args.values()] if isinstance(s.args, dict) else [s.args]
    args = digest.one_line(", ".join(values), max(20, width // 3))
    mark = " [error]" if s.error else ""
    fallback = s.summary if s.summary is not None else s.observation
    return f"{s.index}. {s.action}({args}){mark} -> {digest.gist(s.action, s.observation, fallback, width, s.data)}"


def budget_line(meta: RunMeta | None, elapsed: float | None = None) -> str:
    if meta is None:
        return "unlimited"
    t, lim = meta.totals, meta.limits
    seconds = t.seconds if elapsed is None else elapsed
    parts = []
    if lim.get("max_steps"):
        parts.append(f"{max(0, lim['max_steps'] - t.steps)} of {lim['max_steps']} steps")
    if lim.get("max_time"):
        parts.append(f"{max(0.0, lim['max_time'] - seconds) / 60:.0f} of {lim['max_time'] / 60:.0f} min")
    if lim.get("max_tokens"):
        used = t.tokens_in + t.tokens_out
        parts.append(f"{max(0, lim['max_tokens'] - used)} of {lim['max_tokens']} tokens")
    if lim.get("max_cost"):
        parts.append(f"${max(0.0, lim['max_cost'] - t.cost):.2f} of ${lim['max_cost']:.2f}")
    return ", ".join(parts) or "unlimited"


def system_message(problem: str, tools_text: str, mode: str) -> dict[str, str]:
    """Instructions, actions and problem. In tools mode the native tool schemas already carry
    every action's name, description and arguments, so the list is not written out again."""
    react = mode == "react"
    text = prompts.SYSTEM.format(tools=tools_text if react else prompts.NATIVE_TOOLS,
                                 problem=problem.strip(), format=prompts.FORMAT if react else prompts.TOOLS_FORMAT)
    return {"role": "system", "content": text}


def whole_from(steps: list[AgentStep], s: ContextSettings) -> int:
    """Where the whole steps start. Replayed from the first step, so a step's prompt lays out
    its history exactly as the previous step's did, plus one step: the boundary moves only when
    the whole steps pass ``whole_chars`` (or ``keep_last + collapse_every - 1`` steps), and then
    to ``keep_last`` before the end at once."""
    keep, most = s.keep_last, s.keep_last + s.collapse_every
    sizes = [len(x.shown(True, s)) for x in steps]
    cut = size = 0
    for n, grown in enumerate(sizes, 1):
        size += grown
        if n - cut > keep and (size > s.whole_chars or n - cut >= most):
            cut = n - keep
            size = sum(sizes[cut:n])
    return cut


def _first_older(cut: int, most: int) -> int:
    """The first older step listed: at most ``most`` lines, the oldest dropped ten at a time
    (so the list's opening stays put for ten steps)."""
    return -(-(cut - most) // 10) * 10 if cut > most else 0


def plan_change(base: str, plan: str, since: int) -> str:
    """The latest plan told against the one shown with step ``since`` (in the stable part of the
    prompt): unchanged, what it adds at its end, its changed lines (``-``/``+``), or, rewritten
    throughout, itself."""
    base, plan = base.strip(), plan.strip()
    if plan == base:
        return prompts.PLAN_SAME.format(index=since)
    if plan.startswith(base):
        return prompts.PLAN_ADDS.format(index=since, lines=plan[len(base):].strip("\n"))
    old, new = base.splitlines(), plan.splitlines()
    gone = [f"- {x}" for x in old if x not in new]
    added = [f"+ {x}" for x in new if x not in old]
    edits = "\n".join(gone + added)
    if len(edits) >= len(plan):  # rewritten throughout: the plan itself is shorter
        return prompts.PLAN_REWRITTEN.format(index=since, plan=plan)
    return prompts.PLAN_EDITS.format(index=since, lines=edits)


def step_message(steps: list[AgentStep], plan: str, budget: str, s: ContextSettings,
                 mode: str) -> dict[str, Any]:
    """Older steps, the plan as of the last of them, the whole steps, the plan's change since,
    the budget: each part in place until it must change, so the prompt opens as the last one did
    (see :data:`prompts.STEP`)."""
    cut = whole_from(steps, s)
    older = steps[_first_older(cut, s.older_lines):cut] if s.older_lines else []
    recent = steps[cut:]
    history = (prompts.OLDER.format(lines="\n".join(older_line(x, s.line_chars) for x in older))
               if older else "")
    base = steps[cut - 1].fields.get("Research Plan and Status", "").strip() if cut else ""
    if base and plan.strip():
        history += prompts.PLAN_AT.format(index=steps[cut - 1].index, plan=base)
        latest = plan_change(base, plan, steps[cut - 1].index)
    else:
        latest = prompts.PLAN_LATEST.format(plan=plan.strip() or prompts.NO_PLAN)
    kept = s.keep_last - 1 if cut else 0  # whole through the collapse: their summaries
    blocks = [prompts.RECENT_STEP.format(
        index=x.index, thought=x.thought or "-", action=x.action,
        args=cap_text(_args_text(x.args), s.args_whole)[0],
        observation=x.shown(i >= kept, s)) for i, x in enumerate(recent)]
    text = prompts.STEP.format(
        budget=budget, history=history, plan=latest,
        recent=prompts.RECENT.format(steps="\n\n".join(blocks)) if blocks else "",
        ask=prompts.ASK_REACT if mode == "react" else prompts.ASK_TOOLS)
    return {"role": "user", "content": text, CACHE_POINTS: _cache_points(history, blocks)}


CACHE_POINTS = "cache_points"
"""A step message's key: offsets in its text where a prefix the next prompt repeats may end (after
the older steps, before each whole step). Anthropic's cache needs them as block boundaries; the
other providers send only role and content."""


def _cache_points(history: str, blocks: list[str]) -> list[int]:
    points = [len(history)] if history else []
    at = len(history) + prompts.RECENT.index("{steps}")
    for block in blocks:
        points.append(at)
        at += len(block) + 2  # the "\n\n" between blocks
    return points


def build_messages(problem: str, tools_text: str, steps: list[AgentStep], plan: str, budget: str,
                   settings: ContextSettings, mode: str = "react") -> list[dict[str, str]]:
    return [system_message(problem, tools_text, mode),
            step_message(steps, plan, budget, settings, mode)]


# Ever shorter contexts for a model whose window the full one overflows (a 4k local model):
# fewer and smaller whole steps, observations as their summaries sooner, fewer and shorter older
# lines, long action inputs (a written file) cut in the middle.
DEGRADE = ({}, {"keep_last": 2, "latest_whole": 2500, "whole_chars": 2500, "older_lines": 20},
           {"keep_last": 1, "latest_whole": 1500, "whole_chars": 1500, "older_lines": 10, "line_chars": 80,
            "args_whole": 2000},
           {"keep_last": 1, "latest_whole": 600, "whole_chars": 600, "older_lines": 4, "line_chars": 60,
            "args_whole": 400})


def fit_messages(build: Callable[[ContextSettings], list[dict[str, str]]], settings: ContextSettings,
                 count: Callable[[list[dict[str, str]]], int], budget: int) -> list[dict[str, str]]:
    """The richest of :data:`DEGRADE`'s contexts whose prompt is within ``budget`` tokens
    (``count``: the model's own tokenizer); the shortest if none is, which the model then cuts
    to its window itself. Never raises for length: a small window costs detail, not the run."""
    for change in DEGRADE:
        s = settings.model_copy(update={k: min(v, getattr(settings, k)) for k, v in change.items()})
        messages = build(s)
        if count(messages) <= budget:
            return messages
    return messages
