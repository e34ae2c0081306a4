"""The metadata of one method tool.

Kept free of torch so that the workbench can list tools, build prompts and validate arguments
without paying for (or being able to crash on) a heavy import. The heavy work lives behind
``run``, an ``"module:function"`` string imported only inside the tool's own process.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what actors see (name, description, argument model) and how to run it.

    ``module`` is what ``python -m`` runs inside the sandbox; ``entry`` is passed as the TOOL
    argument when a package offers several tools (left out when it offers one).
    ``run`` names the function ``(args_model_instance) -> dict`` that does the work.
    """

    name: str
    description: str
    args_model: type[BaseModel]
    module: str
    run: str
    entry: str | None = None

    def argv(self, python: str = "python") -> list[str]:
        """Command line that runs this tool; the JSON arguments go on stdin."""
        cmd = [python, "-m", self.module]
        if self.entry:
            cmd.append(self.entry)
        return cmd


def check_seeds(value: int | list[int], limit: int) -> int | list[int]:
    """Validate the shared ``seeds`` argument (see ``methods/_arg_names.py``): an int n means
    seeds 0..n-1, else an explicit list; at most ``limit`` runs, seeds non-negative. Kept here
    so every tool's ``seeds`` is checked, and worded, the same way."""
    if isinstance(value, int) and not 1 <= value <= limit:
        raise ValueError(f"an int n must be in 1..{limit} (meaning seeds 0..n-1)")
    if isinstance(value, list) and (not value or len(value) > limit or any(s < 0 for s in value)):
        raise ValueError(f"a list must hold 1..{limit} non-negative seeds")
    return value


def check_unique(value: list[str], what: str) -> list[str]:
    """Refuse a list argument that names one choice twice (it would run, and be reported, twice
    under one name); ``what`` is the singular noun the message uses."""
    if len(set(value)) != len(value):
        raise ValueError(f"a {what} is listed twice")
    return value


def seed_list(value: int | list[int]) -> list[int]:
    """The seeds a ``seeds`` argument names: ``range(n)`` for an int n, else the list itself."""
    return list(range(value)) if isinstance(value, int) else list(value)
