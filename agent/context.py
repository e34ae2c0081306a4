"""The prompt builder: what the model sees each step, within a small, steady number of tokens.

The static prefix (instructions, tool descriptions, research problem, the response format) is
the system message, identical every step so providers can cache it. The step message lists the
steps, each as one entry that opens with ``Step 7: Execute Script`` and its Research Plan and
Status's change; a collapsed step ends there, its line adding the arguments and what the
observation reported, and a whole step goes on with its thought, input and observation. Last come
only the latest plan (when the steps do not end with it), the budget and the request (a small
model needs it last: without it the 0.5B model edits before it has looked at anything). The
message only grows between collapses, so each prompt opens with the previous one but that tail
(providers' prefix caches, llama.cpp's KV cache). Nothing that
stays is written again: a plan is told once, as its change from the one before it
(:func:`plan_change`). The whole steps stay as written while later ones are appended after
them, until they (their observations and plan changes) pass ``whole_chars`` (or number
``keep_last + collapse_every - 1``); then all but the last ``keep_last`` collapse at once, and
the prompt stays as it was up to the first collapsed step's action. What a step costs the cache is
then what it adds: its whole entry once and, at the collapse that passes it, its line and plan
change once more (the benchmarks' docstrings give the figures). Observations longer than
``summarize_over`` characters are summarised by the fast model when they are recorded (see
:mod:`agent.research`): a step appended since the last collapse shows its observation whole up
to ``latest_whole`` characters (the model acts on it; as ``whole_chars`` by default, since one
larger could not be whole beside any other step), a step kept whole through a collapse shows its
summary. A script's output is shown with its repeated lines folded
(:func:`agent.digest.fold_repeats`, lossless), and collapsed steps say what their observation
reported (:func:`agent.digest.gist`, from the observation's facts). A model with a small window
gets the richest context that fits it (:func:`fit_messages`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from agent import digest, prompts
from environments.acting.observation import cap_text
from environments.record.runs import RunMeta


class ContextSettings(BaseModel):
    keep_last: int = Field(1, ge=0, description="steps left whole (thought, action, input, observation) "
                           "when the older ones collapse to one line each; more are whole between "
                           "collapses (see whole_chars)")
    summarize_over: int = Field(1500, ge=0, description="observations longer than this (chars) are "
                                "summarised by the fast model; a step kept whole through a collapse "
                                "shows the summary; 0 = never")
    latest_whole: int = Field(3600, ge=0, description="a step appended since the last collapse shows "
                              "its observation whole up to this many chars, else as its summary (as "
                              "whole_chars: an observation larger than the whole steps' room is never "
                              "whole beside another; MLAgentBench's threshold is 5,000)")
    whole_chars: int = Field(3600, ge=0, description="the whole steps (their observations and plan "
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
    changed: list[str] | None = None  # workspace files the step changed (None: not known)
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


SUMMARY_MIN_WORDS = 8
PARROTED = ("too long to keep in full", "summarize the observation")  # the prompt's own words


def checked_summary(summary: str | None, observation: str, s: ContextSettings) -> str:
    """The fast model's summary less any sentence that only says the prompt's words back; when
    too little is left (a small local model's "The observation is too long to keep in full."),
    the observation's head and tail within about ``summary_words`` words, marked, instead: a
    long observation is never replaced by nothing."""
    sentences = re.split(r"(?<=[.!?])\s+", (summary or "").strip())
    kept = " ".join(x for x in sentences if not any(p in x.lower() for p in PARROTED)).strip()
    if len(kept.split()) >= SUMMARY_MIN_WORDS:
        return kept
    excerpt, _ = cap_text(observation, s.summary_words * 6)
    return f"[the summary said nothing; the observation's head and tail:]\n{excerpt}"


def _args_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def step_line(s: AgentStep, width: int, whole: bool = False) -> str:
    """``Execute Script(train.py) -> <what the observation reports>`` within about ``width`` chars
    (:func:`agent.digest.gist`); for a step shown ``whole``, only the action (its input and
    observation follow)."""
    mark = " [error]" if s.error else ""
    if whole:
        return f"{s.action}{mark}"
    values = [str(v) for v in s.args.values()] if isinstance(s.args, dict) else [s.args]
    args = digest.one_line(", ".join(values), max(20, width // 3))
    fallback = s.summary if s.summary is not None else s.observation
    return f"{s.action}({args}){mark} -> {digest.gist(s.action, s.observation, fallback, width, s.data)}"


def older_line(s: AgentStep, width: int) -> str:
    """``7. Execute Script(train.py) -> ...``: a step as the research log records it."""
    return f"{s.index}. {step_line(s, width)}"


REPEATED = ("Note: step {index} repeated step {before} exactly ({action}, the same input) and changed "
            "nothing in the workspace, so doing it again will tell you nothing new: take another action.")


def repeat_note(steps: list[AgentStep]) -> str:
    """One sentence for the next prompt when the last step was the one before it again (same
    action, same input) and changed no file: a small model that lists files seven times or
    sends the same edit thrice does not notice by itself. Empty otherwise, and when what
    the step changed is not known."""
    if len(steps) < 2:
        return ""
    before, last = steps[-2], steps[-1]
    if last.action != before.action or last.args != before.args or last.changed != []:
        return ""
    return REPEATED.format(index=last.index, before=before.index, action=last.action)


def budget_line(meta: RunMeta | None, elapsed: float | None = None) -> str:
    if meta is None:
        return "unlimited"
    lim = meta.budgets
    left = lim.left(meta.totals, elapsed)
    parts = []
    if left.max_steps is not None:
        parts.append(f"{left.max_steps} of {lim.max_steps} steps")
    if left.max_time is not None:
        parts.append(f"{left.max_time / 60:.0f} of {lim.max_time / 60:.0f} min")
    if left.max_tokens is not None:
        parts.append(f"{left.max_tokens} of {lim.max_tokens} tokens")
    if left.max_cost is not None:
        parts.append(f"${left.max_cost:.2f} of ${lim.max_cost:.2f}")
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


def _step_plan(plans: list[str], k: int) -> str:
    """A whole step's plan as its entry tells it: its change since the step before."""
    return _told(plans, k, k - 1, prompts.STEP_HEAD)


def _shown_from(cut: int, s: ContextSettings) -> int:
    """The first step the prompt lists: at most ``older_lines`` collapsed steps before ``cut``."""
    return _first_older(cut, s.older_lines) if s.older_lines else cut


def _spent_before(plans: list[str], first: int, cut: int) -> int:
    """The first collapsed step that still tells its plan: the last one (from ``first``) whose
    plan is told whole, the first listed or one rewritten throughout; the plans before it are
    spent, so the history never piles up plan versions."""
    return max((k for k in range(first, cut) if _fresh(plans, k, k - 1 if k > first else -1)), default=first)


def _entries(steps: list[AgentStep], plans: list[str], s: ContextSettings) -> tuple[list[str], list[str]]:
    """The collapsed and the whole steps' entries, as the prompt lists them. Both open with
    ``Step N: <action>``, so at a collapse the prefix the next prompt repeats ends inside the
    first step it collapses, not before it."""
    cut = whole_from(steps, s)
    first = _shown_from(cut, s)
    spent = _spent_before(plans, first, cut)
    kept = s.keep_last - 1 if cut else 0  # whole through the collapse: their summaries
    older, whole = [], []
    if cut and first == cut:  # no lines listed: only the plan as of the last older step
        told = _told(plans, cut - 1, -1, prompts.AFTER_HEAD.format(index=steps[cut - 1].index))
        if told:
            older.append(told + "\n\n")
    for k in range(first, len(steps)):
        x = steps[k]
        told = _told(plans, k, k - 1 if k > first else -1, prompts.STEP_HEAD) if k >= spent or k >= cut else ""
        entry = prompts.STEP_ENTRY.format(index=x.index, line=step_line(x, s.line_chars, whole=k >= cut),
                                          plan=told + "\n" if told else "")
        if k < cut:
            older.append(entry)
            continue
        whole.append(entry + prompts.STEP_DETAIL.format(
            thought=x.thought or "-", args=cap_text(_args_text(x.args), s.args_whole)[0],
            observation=x.shown(k - cut >= kept, s)))
    return older, whole


def step_message(steps: list[AgentStep], plan: str, budget: str, s: ContextSettings,
                 mode: str = "react") -> dict[str, Any]:
    """The steps, then only what they do not say (the plan, when it is not the last one shown;
    a repeated action, :func:`repeat_note`; the budget): each part in place until it must
    change, so the prompt opens as the last one did (see :data:`prompts.STEP`)."""
    plans = plans_as_of(steps)
    older, whole = _entries(steps, plans, s)
    shown = plans[-1] if steps else ""  # the steps end with the latest step's plan
    want = plan.strip() or shown
    if shown and want == shown:
        latest = ""  # the last plan the history shows is the latest: nothing to add
    elif shown:
        latest = plan_change(shown, want)
    else:
        latest = prompts.PLAN_LATEST.format(plan=want or prompts.NO_PLAN)
    history = prompts.HISTORY_HEAD + "".join(older) + "".join(whole) if steps else ""
    told = "".join(part + "\n\n" for part in (latest, repeat_note(steps)) if part)
    text = prompts.STEP.format(budget=budget, history=history, plan=told,
                               ask=prompts.ASK_REACT if mode == "react" else prompts.ASK_TOOLS)
    return {"role": "user", "content": text, CACHE_POINTS: _cache_points([*older, *whole])}


CACHE_POINTS = "cache_points"
"""A step message's key: offsets in its text where a prefix the next prompt repeats may end (the
start of each step's entry). Anthropic's cache needs them as block boundaries; the other
providers send only role and content."""


def _cache_points(entries: list[str]) -> list[int]:
    """The start of each step's entry, where a prefix the next prompt repeats may end."""
    points, at = [], len(prompts.HISTORY_HEAD)
    for entry in entries:
        points.append(at)
        at += len(entry)
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
