"""One step, sectioned: the agent's reasoning fields, the action, the observation.

All sections are one text (one widget) with foldable headers: click a header, or press
``f`` on the Run screen to fold or unfold the reasoning. The first version used a Collapsible
per section (about thirty widgets), and every step shown then re-laid-out and re-rendered all
of them; one text updates in one piece.
"""

from __future__ import annotations

import json

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from environments.record.runs import Step
from tui.terminal_text import visible

REASONING = ["Reflection", "Research Plan and Status", "Fact Check", "Thought"]
SECTIONS = [*REASONING, "Action", "Observation", "Rejected"]
FOLDED_AT_START = frozenset(REASONING[:-1])
EMPTY = "No step selected."


def _meta_field(step: Step, name: str) -> str | None:
    """A reasoning field: the research agent records its parsed response under ``fields``."""
    fields = step.meta.get("fields") or {}
    value = fields.get(name) or step.meta.get(name)
    return str(value) if value else None


def args_text(args: dict | str) -> str:
    """Arguments as a person reads them: ``name: value`` lines, a multi-line value (a file's
    content, an edit instruction) as its own indented block rather than one escaped JSON
    string. The trace keeps the exact JSON."""
    if isinstance(args, str):
        return args
    lines = []
    for name, value in args.items():
        if isinstance(value, str) and "\n" in value.rstrip("\n"):
            body = "\n".join("    " + line for line in value.rstrip("\n").splitlines())
            lines.append(f"{name}:\n{body}")
        else:
            shown = value if isinstance(value, str) and value else json.dumps(value)
            lines.append(f"{name}: {shown}")
    return "\n".join(lines) or "(no arguments)"


def section_texts(step: Step) -> dict[str, tuple[str, str] | None]:
    """Title and body of each section for ``step`` (None: the section is hidden)."""
    out: dict[str, tuple[str, str] | None] = {n: None for n in SECTIONS}
    for name in REASONING:
        text = _meta_field(step, name)
        out[name] = (name, text) if text else None
    out["Action"] = (f"Action · {step.action}", args_text(step.args))
    flag = " · error" if step.error else ""
    code = f" · exit {step.exit_code}" if step.exit_code is not None else ""
    out["Observation"] = (f"Observation{flag}{code} · {step.seconds:.2f}s", step.observation)
    if step.meta.get("rejected"):
        out["Rejected"] = ("Rejected by the person", json.dumps(step.meta["rejected"], indent=2))
    return out


def sections_content(texts: dict[str, tuple[str, str] | None], folded: set[str]) -> Content:
    """The sections as one text: a clickable ▶/▼ header each, the body under an open one.

    Bodies are plain text (an observation's brackets are not markup).
    """
    parts: list[Content | str] = []
    for number, name in enumerate(SECTIONS):
        content = texts.get(name)
        if content is None:
            continue
        title, body = content
        marker = "▶" if name in folded else "▼"
        # styled as a link (link-* rules in labcoat.tcss), which is what a clickable span is
        header = Content(visible(f"{marker} {title}")).stylize(f"@click=toggle_section({number})")
        parts.extend([header, "\n"])
        if name not in folded:
            parts.extend([Content(visible(body.rstrip("\n"))), "\n"])  # ESC shown, not obeyed
        parts.append("\n")
    return Content.assemble(*parts).rstrip() if parts else Content(EMPTY)


class StepSections(Static):
    """The text of :class:`StepDetail`; owns the fold state, which outlives the step shown."""

    def __init__(self, **kw) -> None:
        super().__init__(EMPTY, **kw)
        self.folded: set[str] = set(FOLDED_AT_START)
        self.texts: dict[str, tuple[str, str] | None] = {}

    def show(self, step: Step | None) -> None:
        self.texts = section_texts(step) if step is not None else {}
        self._redraw()

    def action_toggle_section(self, number: int) -> None:
        """A header was clicked (its ``@click`` names the section by its place in SECTIONS)."""
        self.folded ^= {SECTIONS[number]}
        self._redraw()

    def toggle_reasoning(self) -> None:
        """Unfold every reasoning field, or, when none is folded, fold them back as at start."""
        if self.folded & set(REASONING):
            self.folded -= set(REASONING)
        else:
            self.folded |= FOLDED_AT_START
        self._redraw()

    def _redraw(self) -> None:
        self.update(sections_content(self.texts, self.folded))


class StepDetail(VerticalScroll):
    """The selected step's sections in a scrolling panel; sections the step lacks are left out."""

    def compose(self) -> ComposeResult:
        yield StepSections(id="detail-text")

    @property
    def sections(self) -> StepSections:
        return self.query_one("#detail-text", StepSections)

    def show(self, step: Step | None) -> None:
        self.sections.show(step)

    def toggle_reasoning(self) -> None:
        self.sections.toggle_reasoning()
