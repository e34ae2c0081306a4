"""Choosing the actor and budgets for an agent run, and whether to confirm each action.

The form is generated from ``agent.config.OPTIONS``, the same descriptions the CLI's flags are
made of: one row per field of ``ActorConfig`` and ``Budgets`` (a Select where the field takes a
fixed set of values, else an Input), grouped as the flags' help is, the agent's context
settings and the tree agent's folded away. Blank means "the default" (the task's, for budgets),
as an unset flag does.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Collapsible, Input, Label, Select, Static, Switch

from agent.config import ActorConfig, Budgets, Option, build, options

GROUPS = {"actor": "Actor", "context": "Agent context", "tree": "Tree agent (agent: tree)",
          "pool": "Research pool (agent: pool)",
          "budgets": "Budgets (blank: the task's)"}
#: groups folded away at first: settings of one agent or of its context, rarely changed
FOLDED = {"context", "tree", "pool"}
#: not an agent the form can start (the person drives human runs from the Tasks screen)
NOT_OFFERED = {"human"}


def widget_id(option: Option) -> str:
    return "setup-" + option.name.replace("_", "-")


def widget_for(option: Option, value: Any = None) -> Input | Select:
    """The widget of one option: its id from the option's name, its tooltip the flag's help."""
    if option.choices:
        choices = [(c, c) for c in option.choices if c not in NOT_OFFERED]
        widget: Input | Select = Select(choices, prompt="(default)", allow_blank=True,
                                        value=value if value is not None else Select.NULL,
                                        id=widget_id(option), compact=True)
    else:
        placeholder = "" if option.default is None else str(option.default)
        widget = Input("" if value is None else str(value), placeholder=placeholder,
                       id=widget_id(option), compact=True)
    widget.tooltip = option.hint
    return widget


class AgentSetupScreen(ModalScreen):
    HELP_TITLE = "Agent run"
    HELP = """
Start an agent on the task: a model string as `labcoat run --model` takes it (openai/…,
anthropic/…, scripted/FILE, baseline/hparam for the no-LLM agent), every other option of
`labcoat run` (blank: its default; budgets blank: the task's), and whether to confirm each
action before it runs. Agent `tree` is the solution-tree search (its settings under "Tree
agent"); blank chooses research. Enter in any field starts.
"""
    BINDINGS = [("escape", "app.pop_screen", "Cancel")]
    # the dialog never outgrows the terminal: its fields scroll, its buttons stay at the bottom
    DEFAULT_CSS = """
    #agent-setup { max-height: 100%; padding: 0 1; }
    #setup-fields { height: 1fr; max-height: 36; }
    #setup-bottom { dock: bottom; height: auto; }
    #setup-bottom Horizontal { height: auto; }
    .setup-row { height: 1; }
    .setup-row Label { width: 22; }
    .setup-row Input, .setup-row Select { width: 1fr; }
    """

    def __init__(self, task: str, default_model: str = "baseline/hparam") -> None:
        super().__init__()
        self.task_ref = task
        self.default_model = default_model
        self.options = options()

    def compose(self) -> ComposeResult:
        with Vertical(id="agent-setup"):
            yield Static(Content.styled(f"Agent run on {self.task_ref}", "bold"))
            with VerticalScroll(id="setup-fields"):
                for group, title in GROUPS.items():
                    with Collapsible(title=title, collapsed=group in FOLDED):
                        for o in self.options:
                            if o.group == group:
                                with Horizontal(classes="setup-row"):
                                    yield Label(o.name.replace("_", " "))
                                    yield widget_for(o, self.default_model if o.name == "model" else None)
            with Vertical(id="setup-bottom"):
                with Horizontal():
                    yield Label("confirm each action ")
                    yield Switch(False, id="setup-confirm")
                yield Static("", id="setup-error")
                with Horizontal():
                    yield Button("Start", id="setup-start", variant="primary")
                    yield Button("Cancel", id="setup-cancel")

    def on_mount(self) -> None:
        self.query_one("#setup-model", Input).focus()  # focused first: Enter starts

    def values(self) -> dict[str, Any]:
        """Each option's widget value (``None`` where left blank)."""
        out: dict[str, Any] = {}
        for o in self.options:
            widget = self.query_one(f"#{widget_id(o)}")
            value = widget.value
            out[o.name] = None if value is Select.NULL or value == "" else value
        return out

    def config(self) -> tuple[ActorConfig, Budgets]:
        return build(self.values())

    def budgets(self) -> Budgets:
        return self.config()[1]

    @on(Button.Pressed, "#setup-cancel")
    def _cancel(self) -> None:
        self.app.pop_screen()

    @on(Input.Submitted)
    @on(Button.Pressed, "#setup-start")
    def _start(self) -> None:
        """Start (the button, or Enter in any field, as in any form)."""
        try:
            config, budgets = self.config()
        except ValueError as err:
            self.query_one("#setup-error", Static).update(Content.styled(str(err), "red"))
            return
        confirm = self.query_one("#setup-confirm", Switch).value
        self.app.pop_screen()
        self.app.start_agent(self.task_ref, config, budgets, confirm)
