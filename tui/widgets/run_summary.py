"""The Run screen's Score tab: how the run ended (and why, for an ``error``), its score, and
the per-step improvement curve when ``scores.json`` exists."""

from __future__ import annotations

import json

from textual.content import Content
from textual.widgets import Static

from environments.record.runs import RunDir
from environments.scoring.score import Score
from tui.scoring import curve, score_line
from tui.terminal_text import visible
from tui.text_plot import ascii_plot

NO_CURVE = "No per-step scores yet: press C on the Runs screen (or `labcoat score --all-steps`)."


def summary_text(run: RunDir) -> Content:
    """Plain text of the run's ending and scores (the reason may quote an exception: no markup)."""
    meta = run.meta
    parts: list[Content | str] = [Content.styled(meta.status, "bold")]
    if meta.status_reason:
        parts.append(visible(f": {meta.status_reason}"))
    if meta.final_answer:  # the model's words: escapes shown, not obeyed
        parts.append(visible(f"\nfinal answer: {meta.final_answer}"))
    final = run.path / "score.json"
    if final.exists():
        try:
            parts.append("\n" + score_line(Score.model_validate(json.loads(final.read_text()))))
        except ValueError:
            parts.append("\nscore.json is unreadable")
    else:
        parts.append("\nnot scored yet")
    points = curve(run.path)
    parts.append("\n\n")
    parts.append(Content.styled("improvement over steps\n", "bold") if points else "")
    parts.append(ascii_plot({visible(run.meta.model or run.meta.agent): points}, width=48, height=8)
                 if points else NO_CURVE)
    return Content.assemble(*parts)


class RunSummary(Static):
    def show(self, run: RunDir) -> None:
        self.update(summary_text(run))
