"""The environment's actions as LangChain tools, built from the same pydantic models.

``langchain_tools(env)`` gives one ``StructuredTool`` per action (name made tool-safe, the
action's description, its args model as the schema); calling a tool is ``env.step``, so any
LangChain agent can drive labcoat and its steps land in the trace like any other actor's.
"""

from __future__ import annotations

from pydantic import ValidationError

from agent.tools_mode import tool_name
from environments.acting.actions import ActionSpec
from environments.acting.environment import Environment


def langchain_tool(env: Environment, spec: ActionSpec, actor: str = "agent"):
    from langchain_core.tools import StructuredTool

    def run(**kwargs) -> str:
        return env.step(spec.name, kwargs, actor=actor).text

    def bad_input(err: ValidationError) -> str:
        return spec.invalid_input(err)

    return StructuredTool.from_function(func=run, name=tool_name(spec.name), description=spec.description,
                                        args_schema=spec.args_model, handle_validation_error=bad_input)


def langchain_tools(env: Environment, actor: str = "agent") -> list:
    return [langchain_tool(env, spec, actor) for spec in env.actions.values()]
