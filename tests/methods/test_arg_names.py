"""Every method tool's arguments follow one vocabulary (methods/_arg_names.py).

Agents read the schemas of all tools together: a shared name must mean one thing everywhere.
"""

from __future__ import annotations

import pytest

from methods._arg_names import RETIRED, SHARED, unused_shared, violations
from methods.registry import all_tools


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict]:
    return {name: spec.args_model.model_json_schema() for name, spec in all_tools().items()}


def test_every_registered_tool_follows_the_conventions(schemas):
    assert len(schemas) >= 21
    assert violations(schemas) == []


def test_the_shared_table_has_no_stale_entries(schemas):
    assert unused_shared(schemas) == set()


def test_retired_and_shared_names_do_not_overlap():
    assert not set(RETIRED) & set(SHARED)


def test_the_checker_catches_each_kind_of_breach():
    """The rules fire: a name two tools use differently, a retired name, a wrong type."""
    bad = {
        "a": {"properties": {"budget": {"type": "integer"}, "k": {"type": "integer"},
                             "seed": {"type": "string"}, "data_seed": {"type": "number"}}},
        "b": {"properties": {"budget": {"type": "number"},
                             "out": {"anyOf": [{"type": "array"}, {"type": "null"}]}}},
    }
    found = "\n".join(violations(bad))
    assert "budget: used by a, b" in found
    assert "a.k: retired name" in found
    assert "a.seed: types ['string']" in found
    assert "a.data_seed: a *_seed is an integer" in found
    assert "b.out: types ['array', 'null']" in found


@pytest.mark.parametrize(("model", "field", "value", "what"), [
    ("methods.online_lp.tools:OnlineLpArgs", "methods", "subgradient", "method"),
    ("methods.structured_bbvi.tools:BbviArgs", "families", "meanfield", "family"),
])
def test_a_choice_listed_twice_is_refused_in_the_shared_words(model, field, value, what):
    """``toolspec.check_unique`` words the refusal the same in every tool that takes a list."""
    import importlib

    from pydantic import ValidationError

    module, _, name = model.partition(":")
    cls = getattr(importlib.import_module(module), name)
    assert getattr(cls(**{field: [value]}), field) == [value]
    with pytest.raises(ValidationError, match=f"a {what} is listed twice"):
        cls(**{field: [value, value]})
