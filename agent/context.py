"""The prompt builder: what the model sees each step, within a small, steady number of tokens.

The static prefix (instructions, tool descriptions, research problem) is the system message,
identical every step so providers can cache it. The step message holds the remaining budget,
one line for each older step, the latest Research Plan and Status (once, not per step), and the
last ``keep_last`` steps in full. Observations longer than ``summarize_over`` characters are
summarised by the fast model when they are recorded (see :mod:`agent.research`): the latest
observation is still shown whole up to ``latest_whole`` characters (the model acts on it now),
earlier ones as their summaries. A script's output is shown with its repeated lines folded
(:func:`agent.digest.fold_repeats`, lossless), and older steps say what their observation
reported (:func:`agent.digest.gist`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from agent import digest, prompts
from environments.runs import RunMeta


class ContextSettings(BaseModel):
    keep_last: int = Field(3, ge=0, description="steps shown whole (thought, action, input, observation)")
    summarize_over: int = Field(1500, ge=0, description="observations longer than this (chars) are "
                                "summarised by the fast model and shown as the summary once they are "
                                "not the latest; 0 = never")
    latest_whole: int = Field(5000, ge=0, description="the latest observation is shown whole up to "
                              "this many chars (MLAgentBench's threshold), else as its summary")
    summary_words: int = Field(200, ge=20)
    fold_repeats: int = Field(5, ge=0, description="a program's output lines that differ only in their "
                              "numbers, this many or more in a row, are shown as one template and a "
                              "table of the numbers (nothing is lost); 0 = never")
    older_lines: int = Field(40, ge=0, description="older steps listed, one line each")
    line_chars: int = Field(100, ge=40)
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

    def shown(self, latest: bool, s: ContextSettings) -> str:
        """The observation whole, or its summary: see the module docstring for when."""
        text = whole(self.action, self.observation, s)
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
    return f"{s.index}. {s.action}({args}){mark} -> {digest.gist(s.action, s.observation, fallback, width)}"


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


def step_message(steps: list[AgentStep], plan: str, budget: str, s: ContextSettings,
                 mode: str) -> dict[str, str]:
    cut = max(0, len(steps) - s.keep_last)
    older, recent = steps[:cut][-s.older_lines:] if s.older_lines else [], steps[cut:]
    history = (prompts.OLDER.format(lines="\n".join(older_line(x, s.line_chars) for x in older))
               if older else "")
    shown = "\n\n".join(prompts.RECENT_STEP.format(
        index=x.index, thought=x.thought or "-", action=x.action, args=_args_text(x.args),
        observation=x.shown(x is steps[-1], s)) for x in recent)
    text = prompts.STEP.format(
        budget=budget, history=history, plan=plan.strip() or prompts.NO_PLAN,
        recent=prompts.RECENT.format(steps=shown) if recent else "",
        ask=prompts.ASK_REACT if mode == "react" else prompts.ASK_TOOLS)
    return {"role": "user", "content": text}


def build_messages(problem: str, tools_text: str, steps: list[AgentStep], plan: str, budget: str,
                   settings: ContextSettings, mode: str = "react") -> list[dict[str, str]]:
    return [system_message(problem, tools_text, mode),
            step_message(steps, plan, budget, settings, mode)]
