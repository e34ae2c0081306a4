"""The step detail's text: arguments as a person reads them."""

from __future__ import annotations

from environments.record.runs import Step
from tui.widgets.step_detail import args_text, section_texts


def test_a_multi_line_argument_is_shown_as_a_block_not_an_escaped_string():
    text = args_text({"file_name": "train.py", "content": "import numpy\n\nprint('ok')\n",
                      "arguments": "", "start_line_number": 3})
    assert text.splitlines() == ["file_name: train.py", "content:", "    import numpy", "    ",
                                 "    print('ok')", 'arguments: ""', "start_line_number: 3"]
    assert "\\n" not in text


def test_the_action_section_holds_the_arguments_under_the_action_title():
    step = Step(index=2, actor="agent", action="Write File",
                args={"file_name": "a.py", "content": "x = 1\ny = 2\n"}, observation="ok")
    title, body = section_texts(step)["Action"]
    assert title == "Action · Write File"
    assert body == "file_name: a.py\ncontent:\n    x = 1\n    y = 2"
    raw = Step(index=3, actor="agent", action="Final Answer", args="not json", observation="")
    assert section_texts(raw)["Action"][1] == "not json"
