"""One step, sectioned: the agent's reasoning fields, the action, the observation.

The sections are built once and updated in place: stepping through a long run or watching a
live one then costs a text update, not a remount of widgets.
"""

from __future__ import annotations

import json

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Collapsible, Static

from environments.runs import Step

REASONING = ["Reflection", "Research Plan and Status", "Fact Check", "Thought"]
SECTIONS = [*REASONING, "Action", "Observation", "Rejected"]


def _meta_field(step: Step, name: str) -> str | None:
    """A reasoning field: the research agent records its parsed response under ``fields``."""
    fields = step.meta.get("fields") or {}
    value = fields.get(name) or step.meta.get(name)
    return str(value) if value else None


def _key(name: str) -> str:
    return "sec-" + name.lower().replace(" ", "-")


def section_texts(step: Step) -> dict[str, tuple[str, str] | None]:
    """Title and body of each section for ``step`` (None: the section is hidden)."""
    out: dict[str, tuple[str, str] | None] = {n: None for n in SECTIONS}
    for name in REASONING:
        text = _meta_field(step, name)
        out[name] = (name, text) if text else None
    args = step.args if isinstance(step.args, str) else json.dumps(step.args, indent=2)
    out["Action"] = (f"Action · {step.action}", f"{step.action}\n{args}")
    flag = " · error" if step.error else ""
    code = f" · exit {step.exit_code}" if step.exit_code is not None else ""
    out["Observation"] = (f"Observation{flag}{code} · {step.seconds:.2f}s", step.observation)
    if step.meta.get("rejected"):
        out["Rejected"] = ("Rejected by the person", json.dumps(step.meta["rejected"], indent=2))
    return out


class StepDetail(VerticalScroll):
    """Collapsible sections for the selected step; empty sections are hidden."""

    def compose(self) -> ComposeResult:
        yield Static("No step selected.", classes="step-empty")
        for name in SECTIONS:
            with Collapsible(title=name, collapsed=name in REASONING[:-1], id=_key(name)):
                yield Static("", markup=False, classes="section-body")

    def on_mount(self) -> None:
        self.show(None)

    def show(self, step: Step | None) -> None:
        self.query_one(".step-empty").display = step is None
        texts = section_texts(step) if step is not None else {n: None for n in SECTIONS}
        for name, content in texts.items():
            section = self.query_one(f"#{_key(name)}", Collapsible)
            section.display = content is not None
            if content is not None:
                section.title = content[0]
                section.query_one(".section-body", Static).update(content[1])
