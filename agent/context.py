"""The prompt builder: what the model sees each step, within a small, steady number of tokens.

The static prefix (instructions, tool descriptions, research problem) is the system message,
identical every step so providers can cache it. The step message is append-only between rare
collapses, so each prompt opens with the whole of the previous one but its tail (providers'
prefix caches, llama.cpp's KV cache): the older steps, one line each, in blocks, one block per
collapse, each ending with the Research Plan and Status's change over its steps; then the whole
steps, each as it was written, with its plan's change; and last only the budget and the request.
Nothing already written is written again: a plan is told once, as its change from the one before
it in the prompt (:func:`plan_change`), and a collapse appends a block after the blocks before it.
The whole steps stay while later steps are appended after them, until they (their observations
and plan changes) pass ``whole_chars`` (or their number ``keep_last + collapse_every - 1``); then all but the last
``keep_last`` become one block of one-line steps at once, so the rewrite is rare and amortised.
What a step costs the cache is then what it adds: its whole block once and, at the collapse
that passes it, its line and its plan's change once (the benchmarks' docstrings give the
figures). Observations longer than ``summarize_over`` characters are summarised by the fast
model when they are recorded (see :mod:`agent.research`): a step appended since the last
collapse shows its observation whole up to ``latest_whole`` characters (the model acts on it), a
step kept whole through a collapse shows its summary. A script's output is shown with its
repeated lines folded (:func:`agent.digest.fold_repeats`, lossless), and older steps say what
their observation reported (:func:`agent.digest.gist`, from the observation's facts).
A model with a small window gets the richest context that fits it (:func:`fit_messages`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
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
    whole_chars: int = Field(4000, ge=0, description="the whole steps (their observations and plan "
                             "changes) grow in place up to this many chars; past it, all but keep_last "
                             "collapse at once (a small window lowers it)")
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


def collapses(steps: list[AgentStep], s: ContextSettings) -> list[int]:
    """Where the whole steps started after each collapse, in order (the last is where they start
    now). Replayed from the first step, so a step's prompt lays out its history exactly as the
    previous step's did, plus one step: the boundary moves only when the whole steps pass
    ``whole_chars`` (or ``keep_last + collapse_every - 1`` steps), and then to ``keep_last``
    before the end at once. A whole step's size is its observation and its plan's change (a
    plan rewritten every step collapses the history sooner)."""
    keep, most = s.keep_last, s.keep_last + s.collapse_every
    plans = plans_as_of(steps)
    sizes = [len(x.shown(True, s)) + len(_step_plan(plans, k)) for k, x in enumerate(steps)]
    cuts: list[int] = []
    cut = size = 0
    for n, grown in enumerate(sizes, 1):
        size += grown
        if n - cut > keep and (size > s.whole_chars or n - cut >= most):
            cut = n - keep
            cuts.append(cut)
            size = sum(sizes[cut:n])
    return cuts


def whole_from(steps: list[AgentStep], s: ContextSettings) -> int:
    """Where the whole steps start (see :func:`collapses`)."""
    cuts = collapses(steps, s)
    return cuts[-1] if cuts else 0


def _first_older(cut: int, most: int) -> int:
    """The first older step listed: at most ``most`` lines, the oldest dropped ten at a time
    (so the list's opening stays put for ten steps)."""
    return -(-(cut - most) // 10) * 10 if cut > most else 0


def _edits(base: str, plan: str) -> str | None:
    """``plan``'s changed lines against ``base`` (``-``/``+``); None when it is rewritten
    throughout (the plan itself is shorter than its edits)."""
    old, new = base.splitlines(), plan.splitlines()
    edits = "\n".join([f"- {x}" for x in old if x not in new] + [f"+ {x}" for x in new if x not in old])
    return edits if len(edits) < len(plan) else None


def plan_change(base: str, plan: str, head: str = prompts.LATEST_HEAD) -> str:
    """``head``'s plan told against ``base``, the one before it in the prompt: unchanged, what it
    adds at its end, its changed lines, or, rewritten throughout, itself. Each plan is told once,
    as its change, so the history never restates one it already holds."""
    base, plan = base.strip(), plan.strip()
    if plan == base:
        return prompts.PLAN_SAME.format(head=head)
    if plan.startswith(base):
        return prompts.PLAN_ADDS.format(head=head, lines=plan[len(base):].strip("\n"))
    edits = _edits(base, plan)
    if edits is None:
        return prompts.PLAN_REWRITTEN.format(head=head, plan=plan)
    return prompts.PLAN_EDITS.format(head=head, lines=edits)


def plans_as_of(steps: list[AgentStep]) -> list[str]:
    """The Research Plan and Status in force after each step: the last one a response gave (a
    response without one leaves it as it was)."""
    out, plan = [], ""
    for x in steps:
        plan = x.fields.get(prompts.PLAN, "").strip() or plan
        out.append(plan)
    return out


def _told(plans: list[str], i: int, since: int, head: str) -> str:
    """The plan in force after position ``i``, told against the one after position ``since``
    (the last one the prompt shows before it; -1: none): whole, or as its change; "" when there
    is none or it is the same."""
    plan = plans[i]
    base = plans[since] if since >= 0 else ""
    if not plan or plan == base:
        return ""
    return plan_change(base, plan, head) if base else prompts.PLAN_WHOLE.format(head=head, plan=plan)


def _fresh(plans: list[str], i: int, since: int) -> bool:
    """Whether the plan after position ``i`` is told whole (the first, or rewritten throughout),
    so the plans told before it are spent."""
    base = plans[since] if since >= 0 else ""
    plan = plans[i]
    return bool(plan) and plan != base and (not base or (not plan.startswith(base) and _edits(base, plan) is None))


def _history(steps: list[AgentStep], plans: list[str], s: ContextSettings) -> list[str]:
    """The older steps as text blocks, one per collapse, each its steps' lines and then the plan's
    change over them, so a collapse appends a block and leaves the ones before as they were;
    blocks before a plan told whole (rewritten) drop their spent plans, so the history holds no
    plan but the latest one's parts."""
    cuts = collapses(steps, s)
    if not cuts:
        return []
    cut = cuts[-1]
    first = _first_older(cut, s.older_lines) if s.older_lines else cut
    edges = [first, *(c for c in cuts if c > first)]
    if len(edges) == 1:  # no lines listed: only the plan as of the last older step
        told = _told(plans, cut - 1, -1, prompts.AFTER_HEAD.format(index=steps[cut - 1].index))
        return [told + "\n\n"] if told else []
    ends = [b - 1 for b in edges[1:]]
    since = [-1, *ends[:-1]]
    fresh = max((j for j, (e, p) in enumerate(zip(ends, since, strict=True)) if _fresh(plans, e, p)), default=0)
    blocks = []
    for j, (a, b) in enumerate(pairwise(edges)):
        lines = "\n".join(older_line(x, s.line_chars) for x in steps[a:b])
        told = _told(plans, b - 1, since[j], prompts.AFTER_HEAD.format(index=steps[b - 1].index)) if j >= fresh else ""
        blocks.append(prompts.OLDER_BLOCK.format(lines=lines, plan=told) if told else lines + "\n\n")
    blocks[0] = prompts.OLDER + blocks[0]
    return blocks


def _step_plan(plans: list[str], k: int) -> str:
    """A whole step's plan as its block tells it: its change since the step before (whose plan
    is the last the prompt shows before it)."""
    return _told(plans, k, k - 1, prompts.STEP_HEAD)


def step_message(steps: list[AgentStep], plan: str, budget: str, s: ContextSettings,
                 mode: str) -> dict[str, Any]:
    """Older steps in blocks, the whole steps each with its plan's change, then only what the
    history does not say (the plan, when it is not the last one shown; the budget): each part in
    place until it must change, so the prompt opens as the last one did (see :data:`prompts.STEP`)."""
    cut = whole_from(steps, s)
    plans = plans_as_of(steps)
    blocks_before = _history(steps, plans, s)
    history = "".join(blocks_before)
    kept = s.keep_last - 1 if cut else 0  # whole through the collapse: their summaries
    blocks = []
    for i, x in enumerate(steps[cut:]):
        told = _step_plan(plans, cut + i)
        blocks.append(prompts.RECENT_STEP.format(
            index=x.index, plan=told + "\n" if told else "", thought=x.thought or "-", action=x.action,
            args=cap_text(_args_text(x.args), s.args_whole)[0], observation=x.shown(i >= kept, s)))
    shown = plans[-1] if steps else ""  # the history ends with the latest step's plan
    want = plan.strip() or shown
    if shown and want == shown:
        latest = ""  # the last plan the history shows is the latest: nothing to add
    elif shown:
        latest = plan_change(shown, want)
    else:
        latest = prompts.PLAN_LATEST.format(plan=want or prompts.NO_PLAN)
    text = prompts.STEP.format(
        budget=budget, history=history, plan=latest + "\n\n" if latest else "",
        recent=prompts.RECENT.format(steps="\n\n".join(blocks)) if blocks else "",
        ask=prompts.ASK_REACT if mode == "react" else prompts.ASK_TOOLS)
    return {"role": "user", "content": text, CACHE_POINTS: _cache_points(blocks_before, blocks)}


CACHE_POINTS = "cache_points"
"""A step message's key: offsets in its text where a prefix the next prompt repeats may end (after
the older steps, before each whole step). Anthropic's cache needs them as block boundaries; the
other providers send only role and content."""


def _cache_points(history: list[str], blocks: list[str]) -> list[int]:
    points, at = [], 0
    for block in history:
        at += len(block)
        points.append(at)
    at += prompts.RECENT.index("{steps}")
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
