"""ATIF v1.7 (Harbor's Agent Trajectory Interchange Format, RFC 0001) as pydantic models.

Written for labcoat from the published specification, not taken from Harbor: the objects, their
required fields and types, and the rules the format states that a schema alone cannot (step ids
1, 2, 3, ... in order; fields that only an agent step may carry; an observation result pointing
at a tool call of its own step). Unknown fields are refused (``extra="forbid"``) as the reference
models do, so a document these models accept uses only the format's fields; what labcoat has
beyond them travels in the ``extra`` objects the format provides at every level.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = "ATIF-v1.7"
SchemaVersion = Literal["ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
                        "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7"]
Extra = dict[str, Any] | None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImageSource(_Model):
    """v1.6: where an image part's bytes are (a file beside the trajectory, or a URL)."""

    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str


class ContentPart(_Model):
    """v1.6 multimodal content: a text part (``text``) or an image part (``source``)."""

    type: Literal["text", "image"]
    text: str | None = None
    source: ImageSource | None = None

    @model_validator(mode="after")
    def _shape(self) -> ContentPart:
        if self.type == "text" and (self.text is None or self.source is not None):
            raise ValueError("a text content part has text and no source")
        if self.type == "image" and (self.source is None or self.text is not None):
            raise ValueError("an image content part has a source and no text")
        return self


Content = str | list[ContentPart]


class Agent(_Model):
    name: str = Field(description="the agent system's name")
    version: str = Field(description="the agent system's version")
    model_name: str | None = Field(None, description="the default model of the run")
    tool_definitions: list[dict[str, Any]] | None = None
    extra: Extra = None


class ToolCall(_Model):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: Extra = None  # v1.7


class SubagentTrajectoryRef(_Model):
    session_id: str | None = None
    trajectory_id: str | None = None
    trajectory_path: str | None = None
    extra: Extra = None

    @model_validator(mode="after")
    def _resolvable(self) -> SubagentTrajectoryRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError("a subagent reference names a trajectory_id or a trajectory_path "
                             "(a session_id alone may be shared and resolves nothing)")
        return self


class ObservationResult(_Model):
    source_call_id: str | None = None
    content: Content | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: Extra = None  # v1.7


class Observation(_Model):
    results: list[ObservationResult]


class Metrics(_Model):
    prompt_tokens: int | None = Field(None, ge=0)
    completion_tokens: int | None = Field(None, ge=0)
    cached_tokens: int | None = Field(None, ge=0)
    cost_usd: float | None = Field(None, ge=0)
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: Extra = None


class FinalMetrics(_Model):
    total_prompt_tokens: int | None = Field(None, ge=0)
    total_completion_tokens: int | None = Field(None, ge=0)
    total_cached_tokens: int | None = Field(None, ge=0)
    total_cost_usd: float | None = Field(None, ge=0)
    total_steps: int | None = Field(None, ge=0)
    extra: Extra = None


AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class Step(_Model):
    step_id: int = Field(ge=1)
    timestamp: str | None = Field(None, description="ISO 8601")
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(None, ge=0)  # v1.7
    extra: Extra = None

    @model_validator(mode="after")
    def _rules(self) -> Step:
        if self.timestamp is not None:
            try:
                datetime.fromisoformat(self.timestamp.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"step {self.step_id}: timestamp {self.timestamp!r} is not "
                                 "ISO 8601") from None
        if self.source != "agent":
            given = [name for name in AGENT_ONLY if getattr(self, name) is not None]
            if given:
                raise ValueError(f"step {self.step_id}: {', '.join(given)} only on an agent "
                                 f"step (source is {self.source!r})")
        if self.llm_call_count == 0 and self.source == "agent":
            if self.metrics is not None or self.reasoning_content is not None:
                raise ValueError(f"step {self.step_id}: no model call (llm_call_count 0), so no "
                                 "metrics and no reasoning_content")
        if self.observation is not None:
            ids = {c.tool_call_id for c in self.tool_calls or []}
            for result in self.observation.results:
                if result.source_call_id is not None and result.source_call_id not in ids:
                    raise ValueError(f"step {self.step_id}: observation source_call_id "
                                     f"{result.source_call_id!r} is no tool call of the step")
        return self


class Trajectory(_Model):
    schema_version: SchemaVersion = SCHEMA_VERSION
    session_id: str | None = Field(None, description="the run (optional since v1.7)")
    trajectory_id: str | None = Field(None, description="this document (v1.7)")
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    subagent_trajectories: list[Trajectory] | None = None  # v1.7
    extra: Extra = None

    @model_validator(mode="after")
    def _rules(self) -> Trajectory:
        ids = [s.step_id for s in self.steps]
        if ids != list(range(1, len(ids) + 1)):
            raise ValueError(f"step_id must run 1, 2, 3, ... in order (got {ids[:8]}...)")
        if self.subagent_trajectories:
            seen = [t.trajectory_id for t in self.subagent_trajectories]
            if None in seen or len(set(seen)) != len(seen):
                raise ValueError("each embedded subagent trajectory needs a unique trajectory_id")
        return self

    def to_json_dict(self) -> dict[str, Any]:
        """The document as JSON data, fields left unset omitted (as ATIF files are written)."""
        return self.model_dump(mode="json", exclude_none=True)
