"""Which cases of a parametrized family the fast set runs.

README's test command (``-m "not slow"``) has a 10-minute budget on two cores; CI runs the slow
set as well. A family of cases (the attacks on a scratch folder, the hostile scripts, one check
per suite task) walks one code path with other inputs, so the fast set keeps a few
representatives (the cheap cases, and one of each kind of costly case) and the slow set runs
every case: nothing is dropped, and a change that breaks the path fails fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest

ParameterSet = type(pytest.param(None))  # what pytest.param makes (its class is not public API)


def _id(value: Any) -> str:
    if isinstance(value, tuple):
        return "-".join(_id(v) for v in value)
    if isinstance(value, str | int | float | bool):
        return str(value)
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    raise TypeError(f"give {value!r} an id (a pytest.param with id=, or a .name)")


def representatives(values: Iterable[Any], keep: Sequence[str] | Callable[[str], bool]) -> list[ParameterSet]:
    """``values`` as ``pytest.param``s (tuples spread over several argnames), each whose id
    ``keep`` does not name marked slow. ``keep`` is ids, or a predicate on an id; every id it
    names must exist, so a renamed case cannot quietly leave the fast set."""
    params = [v if isinstance(v, ParameterSet) else
              pytest.param(*(v if isinstance(v, tuple) else (v,)), id=_id(v)) for v in values]
    ids = [p.id for p in params]
    if None in ids:
        raise TypeError("every pytest.param given to representatives() needs an id")
    if callable(keep):
        kept = {i for i in ids if keep(i)}
    else:
        missing = set(keep) - set(ids)
        if missing:
            raise ValueError(f"representatives(): no case has the id {sorted(missing)} (ids: {ids})")
        kept = set(keep)
    if not kept:
        raise ValueError(f"representatives() keeps none of {ids} in the fast set")
    return [p if p.id in kept else pytest.param(*p.values, id=p.id, marks=[*p.marks, pytest.mark.slow])
            for p in params]
