"""Acting on a task: the :class:`Environment` (action -> observation, the only way anything
acts), the action framework (:mod:`.actions`), observations (:mod:`.observation`), the path
guard (:mod:`.paths`), MLAgentBench's low-level actions (:mod:`.low_level`), method tools as
actions (:mod:`.tool_actions`), Validate Submission (:mod:`.validation`), the Python REPL
(:mod:`.repl`) and Request Help (:mod:`.help_request`)."""

from __future__ import annotations

from environments.acting.actions import (
    ActionContext,
    ActionFailed,
    ActionInputError,
    ActionSpec,
)
from environments.acting.environment import Environment
from environments.acting.low_level import LOW_LEVEL_ACTIONS
from environments.acting.observation import Observation

__all__ = [
    "ActionContext",
    "ActionFailed",
    "ActionInputError",
    "ActionSpec",
    "Environment",
    "LOW_LEVEL_ACTIONS",
    "Observation",
]
