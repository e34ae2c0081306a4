"""A form generated from an action's pydantic model: never a hand-written form per action.

Strings become inputs (free text the model marks ``LONG``, like file contents, a text area), numbers inputs with a
type, booleans switches, ``Literal`` choices selects. Submitting validates through the same
``ActionSpec.validate`` the agents' actions go through.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic.fields import FieldInfo
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static, Switch, TextArea

from environments.acting.actions import ActionInputError, ActionSpec, is_long


def _kind(info: FieldInfo) -> tuple[str, list[Any]]:
    """('text'|'int'|'float'|'bool'|'choice'|'json', choices)."""
    ann = info.annotation
    origin = typing.get_origin(ann)
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if origin is typing.Literal:
        return "choice", list(typing.get_args(ann))
    if origin is typing.Union and len(args) == 1:
        ann = args[0]
        if typing.get_origin(ann) is typing.Literal:
            return "choice", list(typing.get_args(ann))
    if ann is bool:
        return "bool", []
    if ann is int:
        return "int", []
    if ann is float:
        return "float", []
    if ann is str:
        return "text", []
    return "json", []


class ActionForm(VerticalScroll):
    """Fields for one action, and a submit button.

    Enter in a one-line field submits, as in any form; ctrl+s submits from anywhere (Enter
    in a text area is a new line). ``values`` prefill fields (a person edits a suggestion
    rather than typing a path from memory).
    """

    BINDINGS = [Binding("ctrl+s", "submit", "Submit", id="form.submit")]

    class Submitted(Message):
        def __init__(self, form: ActionForm, action: str, args: dict[str, Any]) -> None:
            super().__init__()
            self.form = form
            self.action = action
            self.args = args

        @property
        def control(self) -> ActionForm:
            return self.form

    def __init__(self, spec: ActionSpec, values: dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec = spec
        self.initial = dict(values or {})

    def on_mount(self) -> None:
        for name, value in self.initial.items():
            if name in self.spec.args_model.model_fields:
                self.set_value(name, value)
        first = next(iter(self.query("Input, TextArea, Switch, Select")), None)
        if first is not None:
            first.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    def action_submit(self) -> None:
        self.submit()

    def compose(self) -> ComposeResult:
        yield Static(Content.assemble((self.spec.name, "bold"), f" — {self.spec.description}"),
                     classes="form-title")
        yield Button("Submit", id="form-submit", variant="primary")
        for name, info in self.spec.args_model.model_fields.items():
            kind, choices = _kind(info)
            required = "" if not info.is_required() else " *"
            yield Label(Content(f"{name}{required}: {info.description or ''}"), classes="form-label")
            default = None if info.is_required() else info.get_default(call_default_factory=True)
            fid = f"field-{name}"
            if kind == "bool":
                yield Switch(value=bool(default), id=fid)
            elif kind == "choice":
                yield Select([(str(c), c) for c in choices], value=default if default in choices
                             else Select.BLANK, id=fid)
            elif kind == "text" and is_long(info):  # marked on the model (environments.acting.actions.LONG)
                yield TextArea("" if default is None else str(default), id=fid, classes="form-long")
            else:
                placeholder = {"int": "an integer", "float": "a number", "json": "JSON"}.get(kind, "")
                value = "" if default is None else (json.dumps(default) if kind == "json" else str(default))
                yield Input(value=value, placeholder=placeholder, id=fid)
        yield Static("", id="form-error", classes="form-error")

    def values(self) -> dict[str, Any]:
        """The raw values typed, converted by field type (validation comes after)."""
        out: dict[str, Any] = {}
        for name, info in self.spec.args_model.model_fields.items():
            kind, _ = _kind(info)
            widget = self.query_one(f"#field-{name}")
            if isinstance(widget, Switch):
                out[name] = widget.value
            elif isinstance(widget, Select):
                if widget.value is not Select.BLANK:
                    out[name] = widget.value
            elif isinstance(widget, TextArea):
                out[name] = widget.text
            else:
                text = widget.value
                if text == "" and not info.is_required():
                    continue
                if kind == "json":
                    try:
                        out[name] = json.loads(text)
                    except json.JSONDecodeError:
                        out[name] = text
                else:
                    out[name] = text  # pydantic converts "12" to int where the model wants one
        return out

    def set_value(self, name: str, value: Any) -> None:
        widget = self.query_one(f"#field-{name}")
        if isinstance(widget, TextArea):
            widget.text = str(value)
        elif isinstance(widget, (Switch, Select)):
            widget.value = value
        else:
            widget.value = value if isinstance(value, str) else json.dumps(value)

    def submit(self) -> None:
        args = self.values()
        error = self.query_one("#form-error", Static)
        try:
            self.spec.validate(args)
        except ActionInputError as err:
            error.update(Content(str(err)))  # quotes what was typed: never markup
            return
        error.update("")
        self.post_message(self.Submitted(self, self.spec.name, args))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "form-submit":
            event.stop()
            self.submit()
