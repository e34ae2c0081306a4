"""One step, sectioned: the agent's reasoning fields, the action, the observation."""

from __future__ import annotations

import json

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Collapsible, Static

from environments.runs import Step

REASONING = ["Reflection", "Research Plan and Status", "Fact Check", "Thought"]


def _meta_field(step: Step, name: str) -> str | None:
    """A reasoning field: the research agent records its parsed response under ``fields``."""
    fields = step.meta.get("fields") or {}
    value = fields.get(name) or step.meta.get(name)
    return str(value) if value else None


class StepDetail(VerticalScroll):
    """Collapsible sections for the selected step; empty sections are left out."""

    def compose(self) -> ComposeResult:
        yield Static("No step selected.", classes="step-empty")

    def show(self, step: Step | None) -> None:
        self.remove_children()
        if step is None:
            self.mount(Static("No step selected.", classes="step-empty"))
            return
        widgets = []
        for name in REASONING:
            text = _meta_field(step, name)
            if text:
                widgets.append(Collapsible(Static(text, markup=False), title=name,
                                           collapsed=name != "Thought"))
        args = step.args if isinstance(step.args, str) else json.dumps(step.args, indent=2)
        widgets.append(Collapsible(Static(f"{step.action}\n{args}", markup=False),
                                   title=f"Action · {step.action}", collapsed=False))
        flag = " · error" if step.error else ""
        exit_code = f" · exit {step.exit_code}" if step.exit_code is not None else ""
        widgets.append(Collapsible(Static(step.observation, markup=False, classes="step-observation"),
                                   title=f"Observation{flag}{exit_code} · {step.seconds:.2f}s",
                                   collapsed=False))
        if step.meta.get("rejected"):
            rejected = json.dumps(step.meta["rejected"], indent=2)
            widgets.append(Collapsible(Static(rejected, markup=False), title="Rejected by the person"))
        self.mount_all(widgets)
