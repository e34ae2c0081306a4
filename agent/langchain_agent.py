"""``--agent langchain``: a LangChain tool-calling agent (MLAgentBench compares against a
LangChain ReAct agent) over :func:`agent.langchain_tools.langchain_tools`.

The chat model is bound to the adapter's tools; each tool call it makes becomes one proposal,
and the observation goes back as a ``ToolMessage``. Like LangChain's own agents it keeps the
whole conversation, which is the point of comparison with the research agent's context.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from agent.actor import ActorError, BaseActor, Proposal
from agent.calllog import Meter
from agent.langchain_tools import langchain_tools
from agent.models.base import ModelError
from agent.models.langchain_model import LangChainModel, reply_from_ai
from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment
from environments.acting.observation import Observation
from environments.record.runs import Step
from environments.untrusted.words import plural

SYSTEM = ("You are a research assistant working on a machine learning research problem. Use the "
          "tools to inspect files, edit and run scripts. Call exactly one tool at a time. When you "
          "are done, call Final_Answer.\n\nResearch problem: {problem}")


class LangChainAgent(BaseActor):
    kind = "agent"

    def __init__(self, model: LangChainModel, retries: int = 3) -> None:
        self.model, self.retries = model, retries
        self.queue: list[dict] = []

    def extra_actions(self) -> Sequence[ActionSpec]:
        return ()

    def start(self, env: Environment, history: Sequence[Step]) -> None:
        from langchain_core.messages import HumanMessage, SystemMessage

        self.meter = Meter(env.run)
        self.tools = langchain_tools(env)
        self.names = {t.name: spec.name for t, spec in zip(self.tools, env.actions.values())}
        self.chat = self.model.runnable(self.tools)
        self.messages = [SystemMessage(SYSTEM.format(problem=env.task.research_problem)),
                         HumanMessage("Begin." if not history else
                                      f"Resume: done so far: {plural(len(history), 'step')}; the last observation:\n"
                                      f"{history[-1].observation}")]

    def propose(self, env: Environment) -> Proposal | None:
        from langchain_core.messages import HumanMessage

        tries = 0
        while not self.queue:
            if tries > self.retries:
                raise ActorError(f"the model called no tool {tries} times in a row")
            tries += 1
            start = time.perf_counter()
            try:
                msg = self.model.invoke(self.chat, self.messages)
            except ModelError as err:
                raise ActorError(str(err)) from err
            reply = reply_from_ai(msg, self.model.name, sum(len(str(m.content)) for m in self.messages))
            logged = [{"role": m.type, "content": m.content,
                       **({"tool_calls": m.tool_calls} if getattr(m, "tool_calls", None) else {})}
                      for m in self.messages]
            self.meter.record(self.model.name, "agent", logged, None, reply, time.perf_counter() - start)
            self.messages.append(msg)
            self.queue = list(msg.tool_calls or [])
            if not self.queue:
                self.messages.append(HumanMessage("Call one of the tools (Final_Answer when done)."))
        call = self.queue.pop(0)
        return Proposal(action=self.names.get(call["name"], call["name"]), args=call.get("args") or {},
                        meta={"tool_call_id": call.get("id")})

    def observe(self, proposal: Proposal, obs: Observation) -> None:
        from langchain_core.messages import ToolMessage

        self.messages.append(ToolMessage(obs.text, tool_call_id=proposal.meta.get("tool_call_id") or ""))
