"""What every part of the Run screen shares: the run, its live session, the step on show,
and the status line.

The Run screen (``tui/screens/run.py``) is composed from parts, each in its own module:
browsing the steps (``run_steps``), acting by hand (``run_hand``), answering an agent's
proposals (``run_confirm``) and steering a live agent (``run_live``). Each part is a
``Screen`` subclass of :class:`RunScreenBase` rather than a plain mixin, because Textual
registers ``@on`` handlers only on classes built by its message-pump metaclass: a plain mixin's
decorated handlers would never be called.
"""

from __future__ import annotations

from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from environments.record.runs import RunDir, Step
from tui.session import AgentSession, HumanSession
from tui.widgets.run_summary import RunSummary
from tui.widgets.status_line import StatusLine


class RunScreenBase(Screen):
    """The state the Run screen's parts read and change together."""

    def __init__(self, run: RunDir, *, human: HumanSession | None = None,
                 agent: AgentSession | None = None) -> None:
        super().__init__()
        self.run = run
        self.human = human
        self.agent = agent
        self.steps: list[Step] = []
        self.current = 0
        self.follow = True
        self.tree_tab = False  # whether the Tree tab was added (a tree run's)
        self.busy = ""  # the action by hand running now, said on the status line

    @property
    def is_live(self) -> bool:
        return self.run.meta.status in ("created", "running")

    def _refresh_status(self) -> None:
        """The status line from the session's actual state (a single step pauses by itself);
        the live agent's part extends it to its buttons."""
        paused = bool(self.agent and self.agent.paused)
        self.query_one("#status", StatusLine).show(self.run.meta, paused, self.busy)

    def _show_summary(self) -> None:
        """Refresh the Score tab where it is mounted (a score can land while the screen is
        still composing its tabs, or already closing)."""
        for summary in self.query("#run-summary").results(RunSummary):
            summary.show(self.run)

    async def _close_form(self) -> bool:
        """Close the form Escape was meant for (a rejection's reason, an edit of a proposal,
        an action by hand); False when none is open."""
        for holder_id in ("#confirm-form-holder", "#form-holder"):
            for holder in self.query(holder_id).results(Vertical):
                if holder.query("#action-form, #confirm-form, #reject-reason"):
                    await holder.remove_children()
                    if holder_id == "#form-holder":
                        await holder.mount(Static("Choose an action.", id="form-hint"))
                        self.query_one("#palette").focus()
                    return True
        return False
