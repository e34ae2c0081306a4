"""The ReAct research agent (MLAgentBench's, tightened): one model call a step, parsed, checked.

Each step: build the prompt (:mod:`agent.context`), call the model, parse the response (react
text or a native tool call), check the action and its input against the environment's actions
(an unusable response gets a reminder; a bad input gets its usage, and the environment is not
called), and hand the action to the runner. Long observations are summarised by the fast model.
A model with a small window (``context_window``, ``count_tokens``: the local llama.cpp one) gets
the richest context that fits it (:func:`agent.context.fit_messages`); one that takes a grammar
(``takes_grammar``) decodes react replies under the actions' grammar, so every one parses.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from agent import prompts
from agent.actor import ActorError, BaseActor, Proposal
from agent.calllog import Meter
from agent.context import (
    AgentStep,
    ContextSettings,
    budget_line,
    build_messages,
    checked_summary,
    fit_messages,
    needs_summary,
    older_line,
)
from agent.llm_actions import LLMActions
from agent.models import Model, ModelError
from agent.models.react_format import FormatError, parse_response
from agent.tools_mode import parse_tool_reply, tool_schemas
from environments.acting.actions import ActionInputError, ActionSpec
from environments.acting.environment import Environment
from environments.acting.observation import Observation, cap_text
from environments.record.runs import Step


class ResearchAgent(BaseActor):
    kind = "agent"

    def __init__(self, model: Model, fast: Model, edit: Model, *, mode: str = "react",
                 settings: ContextSettings | None = None) -> None:
        self.model, self.fast, self.mode = model, fast, mode
        self.settings = settings or ContextSettings()
        self.tools = LLMActions(fast, edit)
        self.steps: list[AgentStep] = []
        self.plan = ""
        self.meter = Meter(None)
        self.grammar: str | None = None
        self.env: Environment | None = None

    def extra_actions(self) -> Sequence[ActionSpec]:
        return self.tools.specs()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        self.env = env
        self.meter = Meter(env.run)
        self.tools.bind(env, self.meter)
        self.specs = list(env.actions.values())
        self.tools_text = prompts.describe_actions(self.specs)
        if self.mode == "react" and getattr(self.model, "takes_grammar", False):
            from agent.models.grammar import react_grammar

            self.grammar = react_grammar([(s.name, s.json_schema()) for s in self.specs])
        for s in history:  # resume: rebuild the context from the trace
            fields = s.meta.get("fields", {})
            self.plan = fields.get("Research Plan and Status", self.plan)
            long = needs_summary(s.observation, self.settings)
            short = cap_text(s.observation, self.settings.summarize_over)[0] if long else None
            self.steps.append(AgentStep(s.index, s.action, s.args, s.observation, s.error,  # no re-summarising
                                        fields.get("Thought", ""), short, fields, s.data, changed=_changed(s)))

    def _messages(self, env: Environment) -> list[dict[str, str]]:
        budget = budget_line(env.run.meta if env.run else None)

        def build(settings: ContextSettings) -> list[dict[str, str]]:
            return build_messages(env.task.research_problem, self.tools_text, self.steps, self.plan,
                                  budget, settings, self.mode)

        window = getattr(self.model, "context_window", None)
        if not window:
            return build(self.settings)
        try:
            return fit_messages(build, self.settings, self.model.count_tokens, window)
        except ModelError as err:  # the tokenizer is the model's: loading it can fail
            raise ActorError(str(err)) from err

    def propose(self, env: Environment) -> Proposal | None:
        messages = self._messages(env)
        tools = tool_schemas(self.specs) if self.mode == "tools" else None
        extra = {"grammar": self.grammar} if self.grammar else {}
        for _ in range(self.settings.format_retries + 1):
            reply = self._call(self.model, messages, "agent", tools, **extra)
            try:
                if tools:
                    action, args, fields = parse_tool_reply(reply, self.specs)
                else:
                    parsed = parse_response(reply.text)
                    action, args, fields = parsed.action, parsed.action_input, parsed.fields
                problem = self._check(env, action, args)
            except FormatError as err:
                template = prompts.TOOL_REMINDER if tools else prompts.FORMAT_REMINDER
                problem = template.format(problem=err)
            if problem is None:
                return Proposal(action=env.lookup(action).name, args=args, meta={"fields": fields})
            messages = [*messages, {"role": "assistant", "content": reply.text or "(a tool call)"},
                        {"role": "user", "content": problem}]
        raise ActorError(f"the model gave {self.settings.format_retries + 1} unusable responses in a row")

    def _check(self, env: Environment, action: str, args) -> str | None:
        """None when the action exists and its input validates; else what to tell the model."""
        spec = env.lookup(action)
        if spec is None:
            close = difflib.get_close_matches(action, list(env.actions), n=1)
            return prompts.UNKNOWN_ACTION.format(action=action, hint=f" Did you mean {close[0]!r}?"
                                                 if close else "", names=", ".join(env.actions))
        try:
            spec.validate(args)
        except ActionInputError as err:
            return prompts.INVALID_INPUT.format(invalid=spec.invalid_input(err))
        return None

    def _call(self, model: Model, messages, role: str, tools=None, **options):
        try:
            return self.meter.call(model, messages, role=role, tools=tools, **options)
        except ModelError as err:
            raise ActorError(str(err)) from err

    def observe(self, proposal: Proposal, obs: Observation) -> None:
        if self.tools.fatal is not None:
            raise ActorError(f"an LLM-backed action failed: {self.tools.fatal}") from self.tools.fatal
        fields = proposal.meta.get("fields", {})
        self.plan = fields.get("Research Plan and Status", self.plan)
        summary = None
        if needs_summary(obs.full_text or obs.text, self.settings):
            action = f"Action: {proposal.action}\nAction Input: {proposal.args}"
            prompt = prompts.SUMMARIZE_OBSERVATION.format(
                action=action, observation=obs.text, chars=len(obs.full_text or obs.text),
                words=self.settings.summary_words)
            reply = self._call(self.fast, [{"role": "user", "content": prompt}], "summarize").text
            summary = checked_summary(reply, obs.full_text or obs.text, self.settings)
        index = self.steps[-1].index + 1 if self.steps else 1
        step = AgentStep(index, proposal.action, proposal.args, obs.text, obs.error,
                         fields.get("Thought", ""), summary, fields, obs.data,
                         changed=_changed(getattr(self.env, "last_step", None)))
        self.steps.append(step)
        self.tools.append_log(older_line(step, 400))


def _changed(step: Step | None) -> list[str] | None:
    """The files a recorded step changed (its snapshot's difference from the one before);
    None when it took no snapshot (an unrecorded session), so nothing is claimed."""
    return list(step.changed) if step is not None and step.snapshot is not None else None
