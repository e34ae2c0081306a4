"""A task's private splits: ``search``, ``select`` and ``test``, and how each is scored.

Hidden consistent evaluation (AIRA₂'s term): one fixed partition of a task's private data, made
by the task's own scripts, into a part the harness scores every candidate on (``search``: the
fitness a search may see, and what Validate Submission reports), a part used only to pick the
final candidate (``select``), and the ``test`` read once for the chosen one. Declared in
``task.toml`` so that what each split *is* (which ids, which seeds) is written next to the task:

    [splits.search]
    about = "200 of the 1,097 held-out images (ids fixed by prepare.py's seed)"
    data = ["search_labels.csv"]      # files under scripts/ that hold it, after prepare

The task's ``scripts/eval.py`` names one function per split (:data:`FUNCTIONS`) and
``split_members(split)``, the ids or seeds a split is made of (what the suite's tests check for
disjointness and fixity). A two-phase task's ``produce.py`` learns which split it is producing
for from ``split.txt``, which the host writes next to ``challenge.txt``
(``methods._submission.split_of``). A task without ``[splits]`` has ``test`` only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SplitName = Literal["search", "select", "test"]
SPLITS: tuple[SplitName, ...] = ("search", "select", "test")
PRIVATE_BEFORE_THE_END: tuple[SplitName, ...] = ("search", "select")
SPLIT_FILE = "split.txt"  # in the submission phase's read-only folder, written by the host

#: (data-only ``eval.py`` function over a folder, two-phase trusted function over outputs)
FUNCTIONS: dict[SplitName, tuple[str, str]] = {
    "test": ("get_score", "score"),
    "search": ("get_search_score", "search_score"),
    "select": ("get_select_score", "select_score"),
}
#: what a task folder written before the splits calls its search function (Validate Submission's)
LEGACY_SEARCH = ("get_validation_score", "validation_score")
MEMBERS = "split_members"


class SplitToml(BaseModel):
    """``[splits.<name>]``: what the split is, in words, and the private files that hold it."""

    model_config = ConfigDict(extra="forbid")

    about: str = Field(min_length=1, description="what the split is made of (ids, seeds, inputs)")
    data: list[str] = Field(default_factory=list, description="files under scripts/ (after "
                            "prepare) holding the split's private data; hashed into the ledger")

    @field_validator("data")
    @classmethod
    def _inside(cls, paths: list[str]) -> list[str]:
        for p in paths:
            parts = p.replace("\\", "/").split("/")
            if p.startswith("/") or ".." in parts or not p.strip():
                raise ValueError(f"{p!r}: a split's data is a path inside scripts/")
        return paths


def function_for(split: SplitName, two_phase: bool) -> str:
    """The ``eval.py`` function that scores ``split``."""
    return FUNCTIONS[split][1 if two_phase else 0]


def declared(splits: dict[str, SplitToml]) -> tuple[SplitName, ...]:
    """The splits a task has, in :data:`SPLITS` order (``test`` always)."""
    return tuple(s for s in SPLITS if s == "test" or s in splits)
