"""The response parser accepts what real models write and names what it cannot use."""

from __future__ import annotations

import pytest

from agent.models.react_format import FormatError, parse_action_input, parse_response

FULL = """Reflection: The file list shows train.py.
Research Plan and Status:
1. Understand train.py (done)
2. Improve it (in progress)
Fact Check: 1 is confirmed.
Thought: Run it.
Action: Execute Script
Action Input: {"script_name": "train.py"}"""


def test_the_canonical_format():
    p = parse_response(FULL)
    assert p.action == "Execute Script" and p.action_input == {"script_name": "train.py"}
    assert p.fields["Research Plan and Status"].startswith("1. Understand train.py")
    assert p.fields["Reflection"] == "The file list shows train.py." and p.fields["Thought"] == "Run it."


@pytest.mark.parametrize("text,expected", [
    ('```json\n{"dir_path": "."}\n```', {"dir_path": "."}),
    ("{'dir_path': '.'}", {"dir_path": "."}),
    ('{"dir_path": ".",}', {"dir_path": "."}),
    ('{\n  "a": 1,\n  "b": [1, 2,],\n}', {"a": 1, "b": [1, 2]}),
    ('{"flag": true, "x": null}', {"flag": True, "x": None}),
    ("{'flag': true, 'msg': 'it is true'}", {"flag": True, "msg": "it is true"}),
    ('{"dir_path": "."}\nThis lists the files. Observation: ...', {"dir_path": "."}),
    ('{"content": "line 1\nline 2 {not a brace}"}', {"content": "line 1\nline 2 {not a brace}"}),
    ('{"content": "say \\"hi\\" }"}', {"content": 'say "hi" }'}),
    ("{'content': 'a\nb'}", {"content": "a\nb"}),
    ('{"content": """x = {1: 2}"""}', {"content": "x = {1: 2}"}),
    ("", {}),
    ("```\n{}\n```", {}),
])
def test_action_inputs_models_write(text, expected):
    assert parse_action_input(text) == expected


@pytest.mark.parametrize("text,message", [
    ('{"dir_path": "."', "not balanced"),
    ("dir_path = .", "JSON object"),
    ('{"a": 1 "b": 2}', "not valid JSON"),
    ("[1, 2]", "JSON object"),
])
def test_unusable_inputs_say_why(text, message):
    with pytest.raises(FormatError, match=message):
        parse_action_input(text)


def test_markdown_headers_and_bold():
    text = ("### Reflection\n**Reflection:** fine\n**Research Plan and Status**: 1. go\n"
            "**Thought:** list\n**Action:** `List Files`\n**Action Input:**\n```json\n{\"dir_path\": \".\"}\n```")
    p = parse_response(text)
    assert p.action == "List Files" and p.action_input == {"dir_path": "."}
    assert p.fields["Research Plan and Status"] == "1. go"


def test_lowercase_headers_and_prose_before():
    text = "Sure! Here is my next step.\n\nthought: look\naction: List Files\naction input: {'dir_path': '.'}"
    p = parse_response(text)
    assert p.action == "List Files" and p.action_input == {"dir_path": "."}


def test_content_that_mentions_headers_is_kept_whole():
    code = 'print(\\"Action: nothing\\")\\nThought: still code'
    text = f'Thought: write\nAction: Write File\nAction Input: {{"file_name": "a.py", "content": "{code}"}}'
    p = parse_response(text)
    assert p.action == "Write File"
    assert p.action_input["content"] == 'print("Action: nothing")\nThought: still code'


def test_hallucinated_observation_and_second_action_are_ignored():
    text = FULL + "\nObservation: it ran\nThought: again\nAction: Final Answer\nAction Input: {\"final_answer\": \"x\"}"
    p = parse_response(text)
    assert p.action == "Execute Script" and p.action_input == {"script_name": "train.py"}


@pytest.mark.parametrize("text,message", [
    ("I will list the files now.", "no 'Action:'"),
    ("Thought: x\nAction: List Files", "no 'Action Input:'"),
    ("Action:\nAction Input: {}", "empty"),
])
def test_responses_without_an_action_say_why(text, message):
    with pytest.raises(FormatError, match=message):
        parse_response(text)


def test_action_name_is_cleaned():
    p = parse_response('Action: **"Edit Script (AI)".**\nAction Input: {}')
    assert p.action == "Edit Script (AI)"
